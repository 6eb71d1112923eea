from __future__ import annotations

import pytest

from shared.agent import AgentSpec
from shared.auth import mint_token, verify_token
from shared.registry import AgentRegistry, load_factory
from shared.settings import Settings


def test_default_and_named_agents_load_once() -> None:
    registry = AgentRegistry.from_settings(
        Settings.from_env({"RELAYLINE_AGENTS": "helper=relayline.demo:build"})
    )
    assert registry.ids() == ["default", "helper"]
    spec = registry.spec("helper")
    assert isinstance(spec, AgentSpec)
    assert registry.spec("helper") is spec
    assert "missing" not in registry
    with pytest.raises(KeyError):
        registry.spec("missing")


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("nomodule", "module:function"),
        ("no_such_module_xyz:build", "Cannot import"),
        ("relayline.demo:nothing", "does not name a callable"),
    ],
)
def test_bad_factories_are_explained(target: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        load_factory(target)


def test_factory_must_return_a_spec() -> None:
    with pytest.raises(TypeError, match="must return an AgentSpec"):
        AgentRegistry({"default": "shared.settings:Settings"}).spec()


def test_tokens_verify_only_with_the_same_secret_and_user() -> None:
    token = mint_token("s3", "ann")
    assert verify_token("s3", token) == "ann"
    assert verify_token("other", token) is None
    assert verify_token("s3", token.replace("ann.", "bob.")) is None
    assert verify_token("s3", "garbage") is None
    with pytest.raises(ValueError, match="Invalid user id"):
        mint_token("s3", "bad user")

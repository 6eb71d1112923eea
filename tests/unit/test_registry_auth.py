from __future__ import annotations

import jwt
import pytest

from relayline.cli import main
from relayline.shared.agent import AgentSpec
from relayline.shared.auth import mint, mint_token, verify_token
from relayline.shared.errors import AgentUnavailableError
from relayline.shared.registry import AgentRegistry, load_factory
from relayline.shared.settings import Settings


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
    with pytest.raises(AgentUnavailableError, match="must return an AgentSpec") as caught:
        AgentRegistry({"default": "relayline.shared.settings:Settings"}).spec()
    assert isinstance(caught.value.__cause__, TypeError)


@pytest.mark.parametrize(
    ("agent_id", "target", "says"),
    [
        # a typo in RELAYLINE_AGENT
        ("default", "relayline.demoo:build", "No module named 'relayline.demoo'"),
        # an import error inside the agent's module
        ("helper", "tests.support.broken_agent:spec", "No module named 'an_sdk_nobody_installed'"),
        # a factory that raises
        ("helper", "tests.support.failure_agents:raising", "RuntimeError: the factory fell over"),
    ],
)
def test_an_agent_that_cannot_be_loaded_names_its_setting(
    agent_id: str, target: str, says: str
) -> None:
    registry = AgentRegistry({agent_id: target})
    variable = "RELAYLINE_AGENT" if agent_id == "default" else "RELAYLINE_AGENTS"
    with pytest.raises(AgentUnavailableError) as caught:
        registry.spec(agent_id)
    message = caught.value.message
    assert message.startswith(f"The agent '{agent_id}' cannot be loaded from {variable} ({target})")
    assert says in message and message.endswith(f"Fix {variable} or the agent's module.")
    assert caught.value.reason == "agent_unavailable"
    with pytest.raises(AgentUnavailableError):  # not cached: the next use tries again
        registry.spec(agent_id)


SECRET = "a-secret-key-of-at-least-32-characters"


def test_tokens_verify_only_with_the_same_secret_and_user() -> None:
    token = mint_token(SECRET, "ann")
    assert verify_token(SECRET, token) == "ann"
    assert verify_token("other-secret-of-at-least-32-characters", token) is None
    header, _, signature = token.split(".")[0], None, token.split(".")[2]
    claims = jwt.encode({"sub": "bob", "iat": 1, "exp": 2**40, "iss": "relayline"}, "x" * 32)
    assert verify_token(SECRET, f"{header}.{claims.split('.')[1]}.{signature}") is None
    assert verify_token(SECRET, mint_token("someone-elses-secret-of-32-characters", "bob")) is None
    assert verify_token(SECRET, "garbage") is None
    with pytest.raises(ValueError, match="Invalid user id"):
        mint_token(SECRET, "bad user")


def test_tokens_expire() -> None:
    minted = mint(SECRET, "ann", ttl=60, now=1_000_000)
    assert minted.expires_at == 1_000_060
    assert verify_token(SECRET, minted.token) is None  # lapsed long ago
    fresh = mint(SECRET, "ann", ttl=60)
    assert verify_token(SECRET, fresh.token) == "ann"


def test_a_token_without_an_expiry_is_refused() -> None:
    forever = jwt.encode({"sub": "ann", "iat": 1, "iss": "relayline"}, SECRET, algorithm="HS256")
    assert verify_token(SECRET, forever) is None
    legacy = "ann.c2lnbmF0dXJl"  # the old <user>.<hmac> shape never verifies again
    assert verify_token(SECRET, legacy) is None


def test_relayline_token_prints_the_token_and_its_expiry(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("SECRET_KEY", raising=False)
    assert main(["token", "ann"]) == 2  # the development secret mints nothing
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "needs SECRET_KEY" in err
    monkeypatch.setenv("SECRET_KEY", SECRET)
    monkeypatch.setenv("RELAYLINE_TOKEN_TTL", "120")
    assert main(["token", "ann"]) == 0
    out, err = capsys.readouterr()
    assert verify_token(SECRET, out.strip()) == "ann"
    claims = jwt.decode(out.strip(), SECRET, algorithms=["HS256"], issuer="relayline")
    assert claims["exp"] - claims["iat"] == 120
    assert err.startswith("expires 20") and "RELAYLINE_TOKEN_TTL=120 s" in err

"""Origins as browsers send them, and RELAYLINE_CORS_ORIGINS (shared.origins)."""

from __future__ import annotations

import pytest

from relayline.shared.origins import origin_of, parse_origins
from relayline.shared.settings import Settings


@pytest.mark.parametrize(
    ("url", "origin"),
    [
        ("https://App.Example", "https://app.example"),
        ("https://app.example:443/some/page?q=1", "https://app.example"),
        ("http://app.example:80", "http://app.example"),
        ("http://127.0.0.1:8000/", "http://127.0.0.1:8000"),
        ("http://[::1]:5000", "http://[::1]:5000"),
        ("null", None),
        ("file:///etc/passwd", None),
        ("https://", None),
        ("http://app.example:99999", None),
    ],
)
def test_origin_of(url: str, origin: str | None) -> None:
    assert origin_of(url) == origin


def test_cors_origins_are_read_and_normalized() -> None:
    env = {"RELAYLINE_CORS_ORIGINS": " https://App.example:443/ , http://localhost:3000,"}
    allowed = Settings.from_env(env).cors_origins
    assert allowed == ("https://app.example", "http://localhost:3000")
    assert Settings.from_env({}).cors_origins == ()
    config = {"RELAYLINE_CORS_ORIGINS": ["https://a.example", "https://b.example"]}
    assert Settings.from_config(config, {}).cors_origins == (
        "https://a.example",
        "https://b.example",
    )


@pytest.mark.parametrize(
    "entry", ["*", "https://*.example", "app.example", "https://app.example/chat", "null"]
)
def test_anything_but_an_origin_is_refused(entry: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_origins(f"https://ok.example,{entry}")
    assert str(caught.value) == (
        "RELAYLINE_CORS_ORIGINS lists origins as scheme://host[:port], separated by "
        f"commas; got {entry!r}."
    )

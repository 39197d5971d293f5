"""Google's ways of sending a key: the x-goog-api-key header anywhere, ?key= on Gemini paths."""

from __future__ import annotations

import pytest

from gw.server.auth import bearer_token, is_gemini_path, query_api_key


def test_x_goog_api_key_is_a_key_like_x_api_key() -> None:
    assert bearer_token({"x-goog-api-key": "k1"}) == "k1"
    assert bearer_token({"authorization": "Bearer k2", "x-goog-api-key": "k1"}) == "k2"


@pytest.mark.parametrize(
    ("path", "query", "expected"),
    [
        ("/v1beta/models/m:generateContent", b"key=k1", "k1"),
        ("/v1beta/models/m:streamGenerateContent", b"alt=sse&key=k%2B1", "k+1"),
        ("/v1/models/openai/gpt-4o:generateContent", b"key=k1", "k1"),
        ("/v1beta/models", b"pageSize=5", None),
        ("/v1/models", b"key=k1", None),  # not a Gemini path: no key from a URL
        ("/v1/chat/completions", b"key=k1", None),
        ("/admin/v1/config", b"key=k1", None),
    ],
)
def test_a_key_in_the_query_counts_on_gemini_paths_only(
    path: str, query: bytes, expected: str | None
) -> None:
    assert query_api_key(path, query) == expected
    assert bearer_token({}, query_api_key(path, query)) == expected


def test_gemini_paths() -> None:
    assert is_gemini_path("/v1beta")
    assert is_gemini_path("/v1beta/files")
    assert is_gemini_path("/v1/models/m:countTokens")
    assert not is_gemini_path("/v1/models/m")
    assert not is_gemini_path("/v1betas")

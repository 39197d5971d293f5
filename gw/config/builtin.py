"""The config gw runs with when there is no file: the built-in mock under route ``mock``."""

from __future__ import annotations

from typing import Any

MOCK_MODEL = "mock-1"

DEFAULT_CONFIG: dict[str, Any] = {
    "providers": [{"name": "mock", "kind": "mock"}],
    "models": [
        {
            "provider": "mock",
            "model": MOCK_MODEL,
            "context_window": 128000,
            "capabilities": ["tools", "vision", "json_schema", "json_object", "embeddings"],
        }
    ],
    "routes": [{"name": "mock", "targets": [{"provider": "mock", "model": MOCK_MODEL}]}],
}

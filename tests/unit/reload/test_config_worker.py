"""load_in_child: a config loaded in a child process arrives as read_config would load it
in-process (its large lists decoded in chunks), with the same hash; its errors arrive as
the same ConfigError, line included."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bench.reload_stall import large_config
from gw.config import ConfigError, config_hash
from gw.config.limits import ConfigLimits
from gw.config.redact import redacted_json
from gw.config_worker import CHUNK, load_in_child
from gw.environment import read_config


def test_a_large_config_arrives_whole_with_its_hash(tmp_path: Path) -> None:
    path = tmp_path / "gw.yaml"
    path.write_text(large_config(3 * CHUNK + 7) + "server: {port: 9000}\n")
    child = asyncio.run(
        load_in_child(path, explicit=True, overrides={"server.port": 9001}, limits=ConfigLimits())
    )
    here = read_config(path, explicit=True, overrides={"server.port": 9001})
    assert child.loaded.config == here.config
    assert child.loaded.config.server.port == 9001
    assert child.loaded.text == here.text
    assert child.hash == config_hash(here.config, ["server.port"])  # the override left out
    assert child.redacted == redacted_json(here.config)


@pytest.mark.parametrize(
    ("text", "limits"),
    [
        ("providers: [{name: m, kind: mock}]\nroutes:\n  - {name: r, targets: []}\n", None),
        ("routes: [\n", None),
        ("# " + "x" * 2000 + "\n", ConfigLimits(max_bytes=1024)),
    ],
)
def test_a_refused_config_raises_the_same_error(
    tmp_path: Path, text: str, limits: ConfigLimits | None
) -> None:
    path = tmp_path / "gw.yaml"
    path.write_text(text)
    limits = limits or ConfigLimits()
    with pytest.raises(ConfigError) as here:
        read_config(path, explicit=True, limits=limits)
    with pytest.raises(ConfigError) as there:
        asyncio.run(load_in_child(path, explicit=True, overrides={}, limits=limits))
    assert str(there.value) == str(here.value)
    assert (there.value.path, there.value.line) == (here.value.path, here.value.line)

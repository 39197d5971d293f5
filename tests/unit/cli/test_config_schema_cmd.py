"""``gw config schema``: the JSON Schema of gw.yaml on stdout or in a file."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
from typer.testing import CliRunner

from gw.cli.init_cmd import example_config
from gw.cli.main import app
from gw.cli.options import override_names
from gw.config.json_schema import config_json_schema
from gw.config.yamlmap import parse_yaml


def test_prints_the_schema_that_validates_gw_init_config() -> None:
    result = CliRunner().invoke(app, ["config", "schema"], prog_name="gw")
    assert result.exit_code == 0, result.output
    schema = json.loads(result.stdout)
    assert schema == config_json_schema(override_names())
    validator = jsonschema.Draft202012Validator(schema)
    validator.validate(parse_yaml(example_config(), "gw.yaml")[0])
    assert not validator.is_valid({"server": {"port": "8787"}})


def test_json_flag_prints_the_same() -> None:
    plain = CliRunner().invoke(app, ["config", "schema"], prog_name="gw")
    flagged = CliRunner().invoke(app, ["config", "schema", "--json"], prog_name="gw")
    assert flagged.exit_code == 0
    assert flagged.stdout == plain.stdout


def test_output_writes_the_file(tmp_path: Path) -> None:
    target = tmp_path / "gw.schema.json"
    result = CliRunner().invoke(app, ["config", "schema", "--output", str(target)], prog_name="gw")
    assert result.exit_code == 0, result.output
    assert f"wrote {target}" in result.stdout
    assert json.loads(target.read_text(encoding="utf-8")) == config_json_schema(override_names())


def test_an_unwritable_output_fails_naming_it(tmp_path: Path) -> None:
    target = tmp_path / "missing" / "gw.schema.json"
    result = CliRunner().invoke(app, ["config", "schema", "-o", str(target)], prog_name="gw")
    assert result.exit_code == 1
    assert "cannot write" in result.stderr
    assert "gw.schema.json" in result.stderr
    assert not target.exists()

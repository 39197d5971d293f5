"""parse_yaml: one parse per text; a user's config by the Python parser (exactly as before),
gw's own catalog by libyaml, with the same data and lines."""

from __future__ import annotations

from importlib import resources
from typing import Any

import pytest
import yaml

from gw.config.problems import ConfigError
from gw.config.yamlmap import _index, parse_yaml

TEXT = """\
server:
  port: 8080
providers:
  - name: a   # a comment
    kind: openai
  - {name: b, kind: anthropic, headers: {x-one: "1"}}
routes:
  - name: chat
    targets:
      - provider: a
        model: "m:1"
      - [nested, list]
empty:
anchors: &base {k: v}
copy: *base
merged:
  <<: *base
  extra: 1
"""


def two_parses(text: str) -> tuple[Any, dict[str, int]]:
    """What parse_yaml did before: compose for the lines, then a second parse for the data."""
    node = yaml.compose(text, Loader=yaml.SafeLoader)
    lines: dict[str, int] = {}
    if node is not None:
        _index(node, "", lines)
    return yaml.safe_load(text), lines


CASES = [TEXT, "", "# only a comment\n", "- 1\n- two\n", "x: 1\n", "a: !\n", "---"]


@pytest.mark.parametrize("text", CASES)
def test_a_config_parses_as_it_did_with_two_parses(text: str) -> None:
    assert parse_yaml(text, "gw.yaml") == two_parses(text)


@pytest.mark.parametrize("text", [TEXT, "x: 1\n", "- 1\n- two\n"])
def test_own_files_parse_to_the_same_data_and_lines(text: str) -> None:
    assert parse_yaml(text, "gw/catalog.yaml", own_file=True) == parse_yaml(text, "gw.yaml")


def test_the_shipped_catalog_parses_alike_with_either_parser() -> None:
    text = resources.files("gw").joinpath("catalog.yaml").read_text(encoding="utf-8")
    fast = parse_yaml(text, "gw/catalog.yaml", own_file=True)
    assert fast == parse_yaml(text, "gw/catalog.yaml")
    assert fast[0]  # not vacuous: the catalog has entries


def test_lines_point_at_keys_items_and_merge_keys() -> None:
    _, lines = parse_yaml(TEXT, "gw.yaml")
    assert lines["providers[1]"] == 6
    assert lines["routes[0].targets[0].model"] == 11
    assert lines["merged.<<"] == 17  # read before building the data flattens the merge


@pytest.mark.parametrize("own_file", [False, True])
@pytest.mark.parametrize(
    ("text", "problem", "line"),
    [
        ("routes: [\n", "expected the node content, but found '<stream end>'", 2),
        ("a: b: c\n", "mapping values are not allowed here", 1),
        ("a: 1\n\tb: 2\n", "found character '\\t' that cannot start any token", 2),
    ],
)
def test_invalid_yaml_reports_the_python_parsers_problem_and_line(
    text: str, problem: str, line: int, own_file: bool
) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_yaml(text, "gw.yaml", own_file=own_file)
    assert caught.value.line == line
    assert f"not valid YAML: {problem}" in str(caught.value)


@pytest.mark.parametrize("text", ["server:\n  port:\t8080\n", "a: x\ty\n", "x: [1,\t2]\n"])
def test_a_config_with_tabs_fails_as_ruamel_would_refuse_to_edit_it(text: str) -> None:
    with pytest.raises(ConfigError, match="not valid YAML"):
        parse_yaml(text, "gw.yaml")

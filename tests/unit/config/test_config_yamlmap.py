"""parse_yaml: libyaml parses, the Python parser explains; both give the same data and lines."""

from __future__ import annotations

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
"""


def python_parse(text: str) -> tuple[Any, dict[str, int]]:
    node = yaml.compose(text, Loader=yaml.SafeLoader)
    lines: dict[str, int] = {}
    if node is not None:
        _index(node, "", lines)
    return yaml.safe_load(text), lines


@pytest.mark.parametrize("text", [TEXT, "", "# only a comment\n", "- 1\n- two\n", "x: 1\n"])
def test_same_data_and_lines_as_the_python_parser(text: str) -> None:
    assert parse_yaml(text, "gw.yaml") == python_parse(text)


def test_lines_point_at_keys_and_items() -> None:
    _, lines = parse_yaml(TEXT, "gw.yaml")
    assert lines["providers[1]"] == 6
    assert lines["routes[0].targets[0].model"] == 11


@pytest.mark.parametrize(
    ("text", "problem", "line"),
    [
        ("routes: [\n", "expected the node content, but found '<stream end>'", 2),
        ("a: b: c\n", "mapping values are not allowed here", 1),
        ("a: 1\n\tb: 2\n", "found character '\\t' that cannot start any token", 2),
    ],
)
def test_invalid_yaml_reports_the_python_parsers_problem_and_line(
    text: str, problem: str, line: int
) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_yaml(text, "gw.yaml")
    assert caught.value.line == line
    assert f"not valid YAML: {problem}" in str(caught.value)

"""parse_yaml: one parse per text, by libyaml (the Python parser for text with a tab, and to
word an error), with the data and lines the Python parser gives."""

from __future__ import annotations

from importlib import resources
from typing import Any

import pytest
import yaml

from gw.config import yamlmap
from gw.config.problems import ConfigError
from gw.config.yamlmap import parse_yaml

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
        old_index(node, "", lines)
    return yaml.safe_load(text), lines


def old_index(node: yaml.Node, path: str, lines: dict[str, int]) -> None:
    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            child = f"{path}.{key_node.value}" if path else str(key_node.value)
            old_index(value_node, child, lines)
            lines[child] = key_node.start_mark.line + 1
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            old_index(item, f"{path}[{index}]", lines)


CASES = [TEXT, "", "# only a comment\n", "- 1\n- two\n", "x: 1\n", "a: !\n", "---"]


@pytest.mark.parametrize("text", CASES)
def test_a_config_parses_as_it_did_with_two_parses(text: str) -> None:
    data, index = parse_yaml(text, "gw.yaml")
    lines = dict(index)
    old_data, old_lines = two_parses(text)
    assert data == old_data
    if text == "---":  # libyaml starts this empty document a line later
        lines[""] = old_lines[""]
    # The same lines, but for paths inside an alias's copies (TEXT's copy and merged),
    # which are now indexed once, where the anchor is.
    assert lines == {path: line for path, line in old_lines.items() if path in lines}
    aliased = {path for path in old_lines if path.startswith(("copy.", "merged.<<."))}
    assert set(old_lines) - set(lines) == aliased


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


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (
            "providers:\n  - name: a\n    kind: mock\n  routes: [x\n",
            "gw.yaml:4: not valid YAML: expected <block end>, but found '?' at column 3 of"
            " '  routes: [x': this line is indented differently from the lines above it, or a"
            " bracket or quote before it is not closed",
        ),
        (
            "providers:\n  - name: a\n     kind: mock\n",
            "gw.yaml:3: not valid YAML: mapping values are not allowed here at column 10 of"
            " '     kind: mock': a ':' where YAML expects none: check this line's indentation,"
            " or quote a value that holds ': '",
        ),
        ("a: 1\n\tb: 2\n", "at column 1 of '\\tb: 2': a tab: indent with spaces"),
        ("a: 1\n  " + "k" * 200 + ": 1\n", "of '  " + "k" * 78 + "':"),  # cut at 80
    ],
)
def test_invalid_yaml_shows_the_line_and_says_what_the_parser_means(text: str, said: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_yaml(text, "gw.yaml")
    assert said in str(caught.value)
    assert "\n" not in str(caught.value)  # one line: file:line: reason


@pytest.mark.parametrize("text", ["server:\n  port:\t8080\n", "a: x\ty\n", "x: [1,\t2]\n"])
def test_a_config_with_tabs_fails_as_ruamel_would_refuse_to_edit_it(text: str) -> None:
    with pytest.raises(ConfigError, match="not valid YAML"):
        parse_yaml(text, "gw.yaml")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("when: 2026-13-45\n", "month must be in 1..12"),
        ("n: !!int lots\n", "invalid literal for int()"),
        ("a: &x [*x]\n", "gw.yaml:1: not valid YAML: an alias refers to a node that contains it"),
        ("a: " + "[" * 2000 + "]" * 2000 + "\n", "nested too deeply"),
    ],
)
def test_values_python_cannot_build_are_config_errors_not_crashes(text: str, problem: str) -> None:
    with pytest.raises(ConfigError, match="not valid YAML") as caught:
        parse_yaml(text, "gw.yaml")
    assert problem in str(caught.value)


def test_a_shared_alias_is_indexed_where_it_is_defined() -> None:
    data, lines = parse_yaml("base: &b {x: 1}\none: *b\ntwo: *b\n", "gw.yaml")
    assert data == {"base": {"x": 1}, "one": {"x": 1}, "two": {"x": 1}}
    assert (lines["base.x"], lines["one"], lines["two"]) == (1, 2, 3)


@pytest.mark.parametrize(
    ("text", "key", "lines"),
    [
        ("server:\n  port: 1\nserver:\n  port: 2\n", "server", (1, 3)),
        ("providers:\n  - name: m\n    kind: mock\n    kind: openai\n", "kind", (3, 4)),
        ("a: {x: 1, x: 2}\n", "x", (1, 1)),
    ],
)
def test_a_key_set_twice_in_one_mapping_is_refused_naming_both_lines(
    text: str, key: str, lines: tuple[int, int]
) -> None:
    with pytest.raises(ConfigError) as refused:
        parse_yaml(text, "gw.yaml")
    assert f"{key!r} is set twice here (lines {lines[0]} and {lines[1]})" in str(refused.value)
    assert refused.value.line == lines[1]


def test_merge_keys_and_equal_keys_in_different_mappings_are_fine() -> None:
    text = "base: &b {k: 1}\none:\n  <<: *b\n  k: 2\ntwo: {k: 3}\n"
    data, _ = parse_yaml(text, "gw.yaml")
    assert data["one"] == {"k": 2}
    assert data["two"] == {"k": 3}


def test_a_config_is_parsed_by_libyaml_unless_it_has_a_tab(monkeypatch: pytest.MonkeyPatch) -> None:
    used: list[str] = []
    real_load = yamlmap._load

    def spy(text: str, loader_class: type[yaml.SafeLoader]) -> tuple[Any, dict[str, int]]:
        used.append(loader_class.__name__)
        return real_load(text, loader_class)

    monkeypatch.setattr(yamlmap, "_load", spy)
    assert parse_yaml("x: 1\n", "gw.yaml")[0] == {"x": 1}
    assert parse_yaml("x: 1  # a\ttab in a comment\n", "gw.yaml")[0] == {"x": 1}
    assert parse_yaml("x: !\ny: Hi!\n", "gw.yaml")[0] == {"x": None, "y": "Hi!"}
    assert parse_yaml("y: [Hi!, '!x']\n", "gw.yaml")[0] == {"y": ["Hi!", "!x"]}
    assert used == ["CSafeLoader", "SafeLoader", "SafeLoader", "CSafeLoader"]


def test_a_check_of_gws_own_fails_alike_without_a_second_parse(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A key set twice is found on libyaml's tree: the error is not parsed again."""
    used: list[str] = []
    real_load = yamlmap._load

    def spy(text: str, loader_class: type[yaml.SafeLoader]) -> tuple[Any, dict[str, int]]:
        used.append(loader_class.__name__)
        return real_load(text, loader_class)

    monkeypatch.setattr(yamlmap, "_load", spy)
    with pytest.raises(ConfigError, match="'x' is set twice here"):
        parse_yaml("x: 1\nx: 2\n", "gw.yaml")
    assert used == ["CSafeLoader"]


@pytest.mark.parametrize(
    "text",
    [
        TEXT,
        "a: [1, 2.5, true, null, ~, '3', 0x1f, 1e3, .inf, 2026-03-15, 2026-03-15T10:00:00Z]\n",
        "1: one\ntrue: yes\nnull: nothing\n2.5: half\n",
        "shared: &s [a, b]\none: *s\ntwo: *s\n",
        "b: !!binary aGk=\ns: !!set {a, b}\no: !!omap [{a: 1}, {b: 2}]\n",
        "n: !!str 12\nm: !!int '7'\n",
        "empty: {}\nnone: []\n",
    ],
)
def test_the_fast_build_gives_pyyamls_data(text: str) -> None:
    """gw builds plain trees itself (4x faster) and leaves the rest to PyYAML: the data is
    PyYAML's either way, shared aliases included."""
    data, _ = parse_yaml(text, "gw.yaml")
    assert data == yaml.load(text, Loader=yaml.SafeLoader)
    if "shared" in data:
        assert data["one"] is data["two"]

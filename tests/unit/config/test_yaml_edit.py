"""yaml_edit: an admin write changes one item and leaves the rest of the file as written."""

from __future__ import annotations

import pytest

from gw.config import load_config
from gw.config.yaml_edit import YamlEditError, delete_item, item_names, upsert_item

TEXT = """\
# top comment
providers:
  - {name: mock, kind: mock}   # the mock

routes:   # what clients ask for
  # the main route
  - name: chat
    strategy: priority          # keep me
    targets:
      - {provider: mock, model: mock-1}
  - name: other
    targets:
      - {provider: mock, model: mock-2}

policies:
  - name: default
    match: {routes: ["*"]}
"""
FAST = {"name": "fast", "targets": [{"provider": "mock", "model": "mock-3"}]}


def test_append_keeps_comments_order_and_validates() -> None:
    text, created = upsert_item(TEXT, "routes", FAST)
    assert created
    assert text.startswith(TEXT[: TEXT.index("  - name: other")])  # untouched before
    for comment in ("# top comment", "# the mock", "# what clients ask for", "# keep me"):
        assert comment in text
    assert item_names(text, "routes") == ["chat", "other", "fast"]
    assert text.index("name: fast") < text.index("\npolicies:")
    config = load_config(text, "t")
    assert [route.name for route in config.routes] == ["chat", "other", "fast"]


def test_replace_in_place_keeps_the_item_position_and_its_comments() -> None:
    item = {"name": "chat", "strategy": "weighted", "targets": [{"provider": "mock", "model": "x"}]}
    text, created = upsert_item(TEXT, "routes", item)
    assert not created
    assert "strategy: weighted          # keep me" in text
    assert "# the main route" in text
    assert item_names(text, "routes") == ["chat", "other"]
    assert load_config(text, "t").routes[0].targets[0].model == "x"
    assert text.endswith(TEXT[TEXT.index("  - name: other") :])  # untouched after


def test_delete_removes_the_item_only() -> None:
    text = delete_item(TEXT, "routes", "other")
    assert text is not None
    assert item_names(text, "routes") == ["chat"]
    assert "# keep me" in text
    assert "policies:\n  - name: default" in text
    assert delete_item(TEXT, "routes", "missing") is None
    first = delete_item(TEXT, "routes", "chat")
    assert first is not None
    assert "# the main route" not in first  # the comment right above went with it
    assert "# what clients ask for" in first
    load_config(first, "t")


@pytest.mark.parametrize(
    "source",
    [
        "",
        "server: {port: 1}\n",
        "routes:\n",
        "routes: []\n",
        "routes:\n- name: old\n  targets:\n  - {provider: mock, model: m}\n",
    ],
)
def test_sections_of_every_shape(source: str) -> None:
    text, created = upsert_item(source, "routes", FAST)
    assert created
    assert "fast" in item_names(text, "routes")


def test_not_a_mapping() -> None:
    with pytest.raises(YamlEditError):
        upsert_item("- a\n- b\n", "routes", FAST)
    with pytest.raises(YamlEditError):
        upsert_item("routes: {a: 1}\n", "routes", FAST)


def test_deleting_the_last_item_leaves_an_empty_list() -> None:
    text = delete_item(TEXT, "policies", "default")
    assert text is not None
    assert "policies: []\n" in text
    assert load_config(text, "gw.yaml").policies == ()
    both = delete_item(delete_item(TEXT, "routes", "chat") or "", "routes", "other")
    assert both is not None
    assert "routes: []   # what clients ask for\n" in both
    assert load_config(both, "gw.yaml").routes == ()


def test_a_yaml_error_names_the_place_but_never_quotes_the_line() -> None:
    broken = "providers:\n  - {name: x, api_key: sk-live-123: oops}\n"
    with pytest.raises(YamlEditError) as caught:
        upsert_item(broken, "routes", FAST)
    message = str(caught.value)
    assert "line 2" in message
    assert "sk-live-123" not in message

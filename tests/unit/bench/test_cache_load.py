"""bench.cache_load: the response cache's targets ask what they claim (every request new,
or every request the same), under a config gw accepts, and their counters are checked."""

from __future__ import annotations

import json
import re

from bench.cache_load import (
    cache_outcomes,
    outcome_note,
    outcome_problem,
    same_body,
    unique_bodies,
    unique_lua_script,
)
from bench.run import chosen_targets
from bench.targets import gw_config
from bench.upstream import ROUTE, chat_body
from gw.config.loader import load_config

METRICS = """\
# HELP gw_cache_requests_total Requests of a policy with the response cache, by hit, miss or bypass.
# TYPE gw_cache_requests_total counter
gw_cache_requests_total{outcome="miss",route="bench"} 1.0
gw_cache_requests_total{outcome="hit",route="bench"} 9211.0
gw_cache_requests_total{outcome="hit",route="other"} 1.0
gw_requests_total{outcome="hit"} 5.0
"""


def test_the_cache_targets_config_is_gws_with_the_cache_on_for_every_route() -> None:
    off = load_config(gw_config("http://127.0.0.1:9"), "bench")
    on = load_config(gw_config("http://127.0.0.1:9", cache=True), "bench")
    assert off.policies == ()
    (policy,) = on.policies
    assert policy.match.routes == ("*",)
    assert policy.cache.enabled
    assert policy.cache.ttl.seconds == 600
    assert on.providers == off.providers
    assert on.routes == off.routes


def test_the_unique_script_builds_each_request_from_the_usual_body() -> None:
    script = unique_lua_script("sk-bench-1")
    before, after = (
        re.search(r"local before = \[==\[(.*)\]==\]", script),
        re.search(r"local after = \[==\[(.*)\]==\]", script),
    )
    assert before is not None
    assert after is not None
    body = json.loads(before.group(1) + "hi 00ff-1" + after.group(1))
    assert body == json.loads(chat_body(stream=False, prompt="hi 00ff-1"))
    assert "function request()" in script  # wrk asks for each request anew
    assert 'wrk.headers["Authorization"] = "Bearer sk-bench-1"' in script


def test_unique_bodies_never_repeat_and_same_body_always_does() -> None:
    first, second = unique_bodies(stream=True), unique_bodies(stream=True)
    bodies = {first(i) for i in range(50)} | {second(i) for i in range(50)}
    assert len(bodies) == 100
    assert all(json.loads(body)["stream"] is True for body in bodies)
    assert all(json.loads(body)["model"] == ROUTE for body in bodies)
    same = same_body(stream=False)
    assert same(0) == same(7) == chat_body(stream=False)


def test_cache_outcomes_sum_the_counter_over_routes() -> None:
    outcomes = cache_outcomes(METRICS)
    assert outcomes == {"miss": 1, "hit": 9212}
    assert outcome_note(outcomes) == "response cache: 9,212 hits, 1 misses"


def test_outcome_problems_say_when_the_workload_was_not_what_it_claims() -> None:
    assert outcome_problem("hit", {"hit": 9212, "miss": 1}) is None
    assert outcome_problem("hit", {"hit": 10, "miss": 3}) == "3 of 13 requests missed the cache"
    assert outcome_problem("miss", {"miss": 4000}) is None
    assert outcome_problem("miss", {"miss": 4000, "hit": 2}) == (
        "2 of 4002 requests hit the cache: not unique"
    )
    assert outcome_problem("miss", {}) == "gw counted no cache lookup: is the cache on?"
    assert outcome_problem("miss", {"miss": 5, "bypass": 1}) == "1 requests bypassed the cache"


def test_only_accepts_the_cache_targets_and_the_default_run_has_them() -> None:
    assert chosen_targets("gw-cache-hit,direct,gw-cache-miss,gw", []) == [
        "direct",
        "gw",
        "gw-cache-miss",
        "gw-cache-hit",
    ]
    assert chosen_targets(None, ["relay"]) == [
        "direct",
        "relay",
        "gw",
        "gw-cache-miss",
        "gw-cache-hit",
    ]

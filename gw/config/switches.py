"""The operator's kill switches (``switches:``), compiled once per snapshot for routing.

A switch takes a provider, a route or a target out of service, or forces a target's
circuit breaker open or closed. Routing reads the ``Switchboard``: a route switched off is
refused (503 ``no_route``); a target switched off, or whose provider is, or whose breaker
is forced open, is a rejected candidate (``switched_off``) that no relaxation brings
back; a breaker forced closed hides that target's health from routing, so it is tried as
if healthy. Each answer says who switched what, when and why. ``switch_problems`` is the
load-time check of ``switches:`` (gw/config/validate.py runs it with the others).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import msgspec

from gw.config.control_schema import SwitchConfig
from gw.config.schema import Config


class Switchboard(msgspec.Struct, frozen=True, kw_only=True):
    """The switches of one snapshot, by subject; each value is the sentence a client and
    ``gw explain`` see."""

    routes_off: dict[str, str] = msgspec.field(default_factory=dict)
    providers_off: dict[str, str] = msgspec.field(default_factory=dict)
    targets_off: dict[str, str] = msgspec.field(default_factory=dict)  # provider/model
    route_targets_off: dict[tuple[str, str], str] = msgspec.field(default_factory=dict)
    breakers_open: dict[str, str] = msgspec.field(default_factory=dict)  # provider/model
    breakers_closed: frozenset[str] = frozenset()

    def target_off(self, route: str, provider: str, key: str) -> str | None:
        """Why the target ``key`` (``provider/model``) of ``route`` may not be called, or
        None when it may."""
        return (
            self.providers_off.get(provider)
            or self.route_targets_off.get((route, key))
            or self.targets_off.get(key)
            or self.breakers_open.get(key)
        )


NO_SWITCHES = Switchboard()


def compile_switches(switches: Iterable[SwitchConfig]) -> Switchboard:
    switches = tuple(switches)
    if not switches:
        return NO_SWITCHES
    board = Switchboard()
    closed: set[str] = set()
    for switch in switches:
        why = switch_sentence(switch)
        if switch.state == "breaker_closed" and switch.target is not None:
            closed.add(switch.target)
        elif switch.state == "breaker_open" and switch.target is not None:
            board.breakers_open[switch.target] = why
        elif switch.provider is not None:
            board.providers_off[switch.provider] = why
        elif switch.route is not None and switch.target is not None:
            board.route_targets_off[(switch.route, switch.target)] = why
        elif switch.route is not None:
            board.routes_off[switch.route] = why
        elif switch.target is not None:
            board.targets_off[switch.target] = why
    return msgspec.structs.replace(board, breakers_closed=frozenset(closed))


def switch_subject(switch: SwitchConfig) -> str:
    """What the switch is about, in words: ``provider openai``, ``target p/m in route r``."""
    if switch.provider is not None:
        return f"provider {switch.provider}"
    if switch.route is not None and switch.target is not None:
        return f"target {switch.target} in route {switch.route}"
    if switch.route is not None:
        return f"route {switch.route}"
    return f"target {switch.target}"


def switch_sentence(switch: SwitchConfig) -> str:
    """``provider openai switched off by admin at 2026-12-06T10:00:00Z: incident 42``."""
    action = {
        "disabled": "switched off",
        "breaker_open": "breaker forced open",
        "breaker_closed": "breaker forced closed",
    }[switch.state]
    who = f" by {switch.by}" if switch.by else " by an operator"
    when = f" at {switch.at}" if switch.at else ""
    why = f": {switch.reason}" if switch.reason else " (no reason given)"
    return f"{switch_subject(switch)} {action}{who}{when}{why}"


def switch_problems(config: Config, providers: set[str]) -> Iterator[tuple[str, str]]:
    """Each switch names what exists, in one of the subject's forms, once: (field, reason)."""
    routes = {route.name: route for route in config.routes}
    seen: set[tuple[str | None, str | None, str | None, bool]] = set()
    for index, switch in enumerate(config.switches):
        here = f"switches[{index}]"
        breaker = switch.state != "disabled"
        problem = _switch_subject_problem(switch, breaker)
        if problem is not None:
            yield here, problem
            continue
        if switch.provider is not None and switch.provider not in providers:
            yield f"{here}.provider", f"unknown provider {switch.provider!r}"
        route = routes.get(switch.route) if switch.route is not None else None
        if switch.route is not None and route is None:
            yield f"{here}.route", f"unknown route {switch.route!r}"
        if switch.target is not None:
            provider, slash, model = switch.target.partition("/")
            if not slash or not model or provider not in providers:
                yield (
                    f"{here}.target",
                    (f"{switch.target!r} is not provider/model of a configured provider"),
                )
            elif route is not None and all(
                (t.provider, t.model) != (provider, model) for t in route.targets
            ):
                yield f"{here}.target", f"route {route.name!r} has no target {switch.target!r}"
        subject = (switch.provider, switch.route, switch.target, breaker)
        if subject in seen:
            yield here, "switches the same subject as an earlier switch; keep one"
        seen.add(subject)


def _switch_subject_problem(switch: SwitchConfig, breaker: bool) -> str | None:
    if breaker:
        if switch.target is None or switch.provider is not None or switch.route is not None:
            return f"state {switch.state} forces a target's breaker: give target alone"
        return None
    if switch.provider is not None and (switch.route is not None or switch.target is not None):
        return "a provider switch names the provider alone (no route or target)"
    if switch.provider is None and switch.route is None and switch.target is None:
        return "names nothing: give provider, route, target, or route and target"
    return None

"""The config sections an operator controls gw with beside routing (gw/config/schema.py
holds the rest and the whole file's ``Config``): kill switches, plugins, guardrails and
the response cache's bounds."""

from __future__ import annotations

from typing import Any, Literal

from gw.config.config_struct import ConfigStruct
from gw.config.units import ByteSize, Duration


class CacheConfig(ConfigStruct, frozen=True, kw_only=True):
    """The response cache's bounds, in memory and at rest (sealed, in the store): the
    least recently used entries go first beyond ``max_bytes``."""

    max_bytes: ByteSize = ByteSize(64 * 1024 * 1024)
    max_entry_bytes: ByteSize = ByteSize(1024 * 1024)


SwitchState = Literal["disabled", "breaker_open", "breaker_closed"]


class SwitchConfig(ConfigStruct, frozen=True, kw_only=True):
    """An operator's kill switch. Its subject is one of: ``provider``; ``route``; ``target``
    (``provider/model``, in every route); ``route`` and ``target`` (in that route only).
    ``disabled`` takes the subject out of service; ``breaker_open`` / ``breaker_closed``
    (a ``target`` alone) force its circuit breaker. ``reason``, ``by`` and ``at`` say why,
    who and when (``gw switch`` fills them in)."""

    provider: str | None = None
    route: str | None = None
    target: str | None = None
    state: SwitchState = "disabled"
    reason: str | None = None
    by: str | None = None
    at: str | None = None


PluginHook = Literal["before_routing", "before_attempt", "after_answer"]
PluginOnError = Literal["skip", "fail"]


class PluginConfig(ConfigStruct, frozen=True, kw_only=True):
    """A plugin (gw/plugin_api.py): Python code gw calls at its hooks, each call within
    ``timeout``. ``entry_point`` is ``package.module:object`` or the name of an installed
    entry point in group ``gw.plugins``; a class is instantiated with ``settings``.
    ``hooks``: the hooks gw calls (default: every hook the object has). ``on_error``: what a
    hook that raises or times out does to the request (``skip`` it, or ``fail`` it)."""

    name: str
    entry_point: str
    hooks: tuple[PluginHook, ...] | None = None
    timeout: Duration = Duration(0.05)
    on_error: PluginOnError = "skip"
    settings: dict[str, Any] = {}


GuardrailAction = Literal["block", "mask"]
GuardrailStage = Literal["input", "output"]
PiiKind = Literal["email", "phone", "card", "key"]


class GuardrailConfig(ConfigStruct, frozen=True, kw_only=True):
    """A content rule (gw/config/guardrails.py), applied by the policies that list it, or to
    every request (``everywhere``). ``block`` refuses a request or answer in which any of
    ``patterns``, ``words`` or ``pii`` is found (400 ``content_blocked`` naming the rule);
    ``mask`` replaces what it finds in the prompt before the upstream sees it. ``models``:
    a blocklist of targets (globs on ``provider/model`` or the model) never called."""

    name: str
    action: GuardrailAction = "block"
    apply_to: tuple[GuardrailStage, ...] | None = None  # None: block both, mask the input
    patterns: tuple[str, ...] = ()
    words: tuple[str, ...] = ()
    pii: tuple[PiiKind, ...] = ()
    models: tuple[str, ...] = ()
    replacement: str | None = None  # mask: None puts [EMAIL], [PHONE], ... or [MASKED]
    everywhere: bool = False
    stream_window: int = 512  # characters of a streamed answer a match may span
    timeout: Duration = Duration(0.1)  # all searches of one check; longer fails closed

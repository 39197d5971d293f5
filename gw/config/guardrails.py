"""Guardrails (``guardrails:``), compiled once per snapshot: what each policy checks.

A rule looks for ``patterns`` (regular expressions), ``words`` (whole words or phrases,
any case) and ``pii`` (e-mail, phone, card and key-like strings) in text, and either
blocks (the request or answer is refused, naming the rule) or masks (the prompt's
matches are replaced before the upstream sees it). ``models`` is a blocklist of targets.
A policy applies the rules it lists plus every rule marked ``everywhere``.

Patterns run on the ``regex`` module, not ``re``: each search has a time budget
(``timeout``), so an operator's pattern that backtracks catastrophically on some prompt
costs at most that, and the check fails closed (``GuardrailTimeoutError``) instead of
stalling the event loop. Nothing here ever puts matched text in a message.
"""

from __future__ import annotations

import fnmatch
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from gw.config.control_schema import GuardrailConfig, GuardrailStage
from gw.config.schema import Config, PolicyConfig

# What masking puts in place of each kind of PII (``replacement`` overrides all of them).
PII_LABELS: dict[str, str] = {
    "email": "[EMAIL]",
    "phone": "[PHONE]",
    "card": "[CARD]",
    "key": "[KEY]",
}
MASKED_LABEL = "[MASKED]"

_EMAIL = r"(?<![\w.%+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}(?![\w-])"
# International (+CC ...), or North American with separators; 7 to 15 digits (checked).
_PHONE = (
    r"(?<![\w+])(?:\+\d{1,3}[ .-]?(?:\(\d{1,4}\)[ .-]?)?\d{1,4}(?:[ .-]?\d{2,4}){1,4}"
    r"|\(\d{3}\)[ .-]?\d{3}[ .-]\d{4}|\d{3}[.-]\d{3}[.-]\d{4})(?!\w)"
)
# 13 to 19 digits, in groups or not; only those passing the Luhn check count.
_CARD = r"(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d-])"
# Credentials with a recognisable shape: provider API keys, cloud and chat tokens, JWTs,
# private keys, age secret keys and gw's own keys.
_KEY = (
    r"(?<![A-Za-z0-9_-])(?:sk-(?:ant-|proj-|live-|test-)?[A-Za-z0-9_-]{20,}"
    r"|AKIA[0-9A-Z]{16}|gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,}"
    r"|xox[abprs]-[A-Za-z0-9-]{10,}|AIza[0-9A-Za-z_-]{35}|gw-[A-Za-z0-9_-]{40,}"
    r"|AGE-SECRET-KEY-1[0-9A-Z]{58}"
    r"|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})(?![A-Za-z0-9_-])"
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----"
)
PII_PATTERNS: dict[str, str] = {"email": _EMAIL, "phone": _PHONE, "card": _CARD, "key": _KEY}

MIN_STREAM_WINDOW = 16
MAX_STREAM_WINDOW = 65536
MAX_TIMEOUT_S = 1.0


class GuardrailTimeoutError(Exception):
    """A rule's search ran past its time budget; the check fails closed."""

    def __init__(self, rule: str) -> None:
        super().__init__(rule)
        self.rule = rule


def _digits(text: str) -> str:
    return "".join(char for char in text if char.isdigit())


def _luhn(digits: str) -> bool:
    total = 0
    for position, char in enumerate(reversed(digits)):
        value = int(char)
        if position % 2:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def _valid(kind: str, found: str) -> bool:
    """Whether a pattern's match is that PII (its shape alone over-matches some)."""
    if kind == "card":
        digits = _digits(found)
        return 13 <= len(digits) <= 19 and _luhn(digits)
    if kind == "phone":
        return 7 <= len(_digits(found)) <= 15
    return True


@dataclass(frozen=True, slots=True)
class TextRule:
    """One rule's text matchers, compiled: ``found`` for block, ``masked`` for mask."""

    name: str
    action: str
    stages: frozenset[GuardrailStage]
    patterns: tuple[Any, ...]  # regex.Pattern, one per configured pattern, then the words
    pii: tuple[tuple[str, Any], ...]  # (kind, regex.Pattern)
    replacement: str | None
    stream_window: int
    timeout: float

    def deadline(self) -> float:
        """When a check that starts now must be done: ``timeout`` covers every search of
        one prompt or answer together, not each one."""
        return time.monotonic() + self.timeout

    def found(self, text: str, deadline: float) -> bool:
        """Whether anything the rule looks for is in ``text``."""
        try:
            for pattern in self.patterns:
                if pattern.search(text, timeout=self._left(deadline)) is not None:
                    return True
            return any(self._spans(kind, pattern, text, deadline) for kind, pattern in self.pii)
        except TimeoutError:
            raise GuardrailTimeoutError(self.name) from None

    def masked(self, text: str, counts: dict[str, int], deadline: float) -> str:
        """``text`` with every match replaced; ``counts`` gains how many of each kind."""
        try:
            # A function, so the replacement is taken as it is written, never as a
            # template (``\g<0>`` would put the match back).
            label = self.replacement or MASKED_LABEL
            literal = lambda _: label  # noqa: E731
            for pattern in self.patterns:
                text, replaced = pattern.subn(literal, text, timeout=self._left(deadline))
                if replaced:
                    counts["pattern"] = counts.get("pattern", 0) + replaced
            for kind, pattern in self.pii:
                spans = self._spans(kind, pattern, text, deadline)
                if spans:
                    counts[kind] = counts.get(kind, 0) + len(spans)
                    text = _replaced(text, spans, self.replacement or PII_LABELS[kind])
        except TimeoutError:
            raise GuardrailTimeoutError(self.name) from None
        return text

    def _left(self, deadline: float) -> float:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        return left

    def _spans(self, kind: str, pattern: Any, text: str, deadline: float) -> list[tuple[int, int]]:
        """Where ``kind`` is in ``text``, its shape checked, the spans apart. Card numbers
        are looked for at every start (overlapped): a digit before a card would otherwise
        make one candidate too long to pass the Luhn check, and hide the card."""
        spans: list[tuple[int, int]] = []
        overlapped = kind == "card"
        for match in pattern.finditer(text, overlapped=overlapped, timeout=self._left(deadline)):
            if (not spans or match.start() >= spans[-1][1]) and _valid(kind, match.group()):
                spans.append(match.span())
        return spans


def _replaced(text: str, spans: list[tuple[int, int]], label: str) -> str:
    parts, last = [], 0
    for start, end in spans:
        parts += [text[last:start], label]
        last = end
    return "".join([*parts, text[last:]])


@dataclass(frozen=True, slots=True)
class ModelRule:
    name: str
    globs: tuple[str, ...]

    def blocks(self, provider: str, model: str) -> bool:
        """Whether target ``provider/model`` is on the list (as it, or its bare model)."""
        key = f"{provider}/{model}"
        return any(
            fnmatch.fnmatchcase(key, glob) or fnmatch.fnmatchcase(model, glob)
            for glob in self.globs
        )


@dataclass(frozen=True, slots=True)
class PolicyGuards:
    """The rules one policy applies, by where they apply."""

    input_block: tuple[TextRule, ...] = ()
    input_mask: tuple[TextRule, ...] = ()
    output_block: tuple[TextRule, ...] = ()
    models: tuple[ModelRule, ...] = ()

    @property
    def stream_window(self) -> int:
        return max((rule.stream_window for rule in self.output_block), default=0)

    def blocked_by(self, provider: str, model: str) -> str | None:
        """The model rule that keeps target ``provider/model`` from being called, if any."""
        for rule in self.models:
            if rule.blocks(provider, model):
                return rule.name
        return None


@dataclass(frozen=True, slots=True)
class Guardrails:
    """Every policy's guards; a policy not in ``by_policy`` gets ``everywhere``'s."""

    by_policy: dict[str, PolicyGuards] = field(default_factory=dict)
    everywhere: PolicyGuards | None = None

    def for_policy(self, policy: str) -> PolicyGuards | None:
        """None when no rule applies to the policy's requests (the common case: free)."""
        return self.by_policy.get(policy, self.everywhere)


NO_GUARDRAILS = Guardrails()


def compile_guardrails(config: Config) -> Guardrails:
    """The config's rules, compiled; assumes ``guardrail_problems`` found none."""
    if not config.guardrails:
        return NO_GUARDRAILS
    compiled = {rule.name: _compile(rule) for rule in config.guardrails}
    everywhere = [rule.name for rule in config.guardrails if rule.everywhere]
    by_policy = {
        policy.name: _guards(compiled, [*everywhere, *_listed(policy, everywhere)])
        for policy in config.policies
        if policy.guardrails
    }
    return Guardrails(
        by_policy=by_policy, everywhere=_guards(compiled, everywhere) if everywhere else None
    )


def _listed(policy: PolicyConfig, everywhere: list[str]) -> list[str]:
    return [name for name in policy.guardrails if name not in everywhere]


def _guards(
    compiled: dict[str, tuple[TextRule | None, ModelRule | None]], names: Iterable[str]
) -> PolicyGuards:
    text = [compiled[name][0] for name in names if compiled[name][0] is not None]
    models = [compiled[name][1] for name in names if compiled[name][1] is not None]
    return PolicyGuards(
        input_block=tuple(r for r in text if r and r.action == "block" and "input" in r.stages),
        input_mask=tuple(r for r in text if r and r.action == "mask"),
        output_block=tuple(r for r in text if r and r.action == "block" and "output" in r.stages),
        models=tuple(rule for rule in models if rule is not None),
    )


def _compile(rule: GuardrailConfig) -> tuple[TextRule | None, ModelRule | None]:
    import regex  # noqa: PLC0415 - only a config with guardrails pays its import

    models = ModelRule(name=rule.name, globs=rule.models) if rule.models else None
    if not (rule.patterns or rule.words or rule.pii):
        return None, models
    patterns = [regex.compile(pattern) for pattern in rule.patterns]
    if rule.words:
        # Longest first, so a mask replaces "foo bar" whole rather than "foo" in it.
        words = sorted(rule.words, key=len, reverse=True)
        alternation = "|".join(regex.escape(word.strip()) for word in words)
        patterns.append(regex.compile(rf"(?<!\w)(?:{alternation})(?!\w)", regex.IGNORECASE))
    text = TextRule(
        name=rule.name,
        action=rule.action,
        stages=frozenset(stages_of(rule)),
        patterns=tuple(patterns),
        pii=tuple((kind, regex.compile(PII_PATTERNS[kind])) for kind in dict.fromkeys(rule.pii)),
        replacement=rule.replacement,
        stream_window=rule.stream_window,
        timeout=rule.timeout.seconds,
    )
    return text, models


def stages_of(rule: GuardrailConfig) -> tuple[GuardrailStage, ...]:
    """Where a rule applies: as configured, else block both ways and mask the prompt."""
    if rule.apply_to is not None:
        return rule.apply_to
    return ("input", "output") if rule.action == "block" else ("input",)


def guardrail_problems(config: Config) -> Iterator[tuple[str, str]]:
    """Each rule can run and is applied somewhere; each policy names rules that exist."""
    names = {rule.name for rule in config.guardrails}
    listed = {name for policy in config.policies for name in policy.guardrails}
    seen: set[str] = set()
    for index, rule in enumerate(config.guardrails):
        here = f"guardrails[{index}]"
        if not rule.name.strip() or not rule.name.isprintable():
            yield f"{here}.name", "must not be empty or hold control characters"
        elif rule.name in seen:
            yield f"{here}.name", f"{rule.name!r} is defined twice"
        seen.add(rule.name)
        if not rule.everywhere and rule.name not in listed:
            yield (
                here,
                f"rule {rule.name!r} applies to no request: list it in a policy's "
                "guardrails, or set everywhere: true",
            )
        yield from _rule_problems(here, rule)
        yield from _text_problems(here, rule)
    for index, policy in enumerate(config.policies):
        for number, name in enumerate(policy.guardrails):
            if name not in names:
                known = ", ".join(sorted(names)) or "none"
                yield (
                    f"policies[{index}].guardrails[{number}]",
                    f"unknown guardrail {name!r}; guardrails: {known}",
                )


def _rule_problems(here: str, rule: GuardrailConfig) -> Iterator[tuple[str, str]]:
    if not (rule.patterns or rule.words or rule.pii or rule.models):
        yield here, "looks for nothing: give patterns, words, pii or models"
    if rule.action == "mask" and rule.models:
        yield f"{here}.models", "a model blocklist blocks; put it in a rule with action block"
    if rule.apply_to is not None and not rule.apply_to:
        yield f"{here}.apply_to", "must name input, output or both"
    elif rule.action == "mask" and "output" in stages_of(rule):
        yield (
            f"{here}.apply_to",
            "mask applies to the input only (an answer is checked, not rewritten); "
            "use action block for the output",
        )
    if rule.replacement is not None and rule.action != "mask":
        yield f"{here}.replacement", "only a mask rule replaces text"
    if not MIN_STREAM_WINDOW <= rule.stream_window <= MAX_STREAM_WINDOW:
        yield (
            f"{here}.stream_window",
            f"must be between {MIN_STREAM_WINDOW} and {MAX_STREAM_WINDOW} characters",
        )
    if not 0 < rule.timeout.seconds <= MAX_TIMEOUT_S:
        yield f"{here}.timeout", f"must be longer than 0s and at most {MAX_TIMEOUT_S:g}s"


def _text_problems(here: str, rule: GuardrailConfig) -> Iterator[tuple[str, str]]:
    for number, word in enumerate(rule.words):
        if not word.strip():
            yield f"{here}.words[{number}]", "must not be empty"
    if not rule.patterns:
        return
    import regex  # noqa: PLC0415 - only a config with patterns pays its import

    for number, pattern in enumerate(rule.patterns):
        try:
            regex.compile(pattern)
        except (regex.error, ValueError) as error:
            yield f"{here}.patterns[{number}]", f"not a valid regular expression: {error}"

"""The response cache: whole answers kept for the same canonical request, opt-in per
policy (``policies[].cache``), bounded by ``cache:``.

The key is the request in gw's own form (the IR), so the same question asked in OpenAI
Chat Completions, Anthropic Messages or Gemini format is one entry, served in whichever
format asks next. What does not change the answer is left out of the key: streaming or
not, the usage-chunk option, the end user's id, prompt-cache marks, and ``max_tokens``,
which is checked instead: an entry that ended on its own serves any request whose limit
its answer fits, one cut at its limit only a request with the same limit. Entries are
scoped to the caller's tenant (open mode: one scope) unless the policy says ``shared``;
the scope is part of the hashed key, so one tenant can never read another's.

Entries live in this process's memory (and, sealed, in the store: gw/execution/
answers_at_rest.py); nothing of them reaches a trace or a log. The least recently used
go first beyond ``max_bytes``; an answer larger than ``max_entry_bytes`` is not kept;
each expires after its policy's ``ttl``.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Literal

import msgspec

from gw.execution.semantic_cache import Probe, similarity
from gw.ir import ChatResponse
from gw.routing.decision import TargetRef

CacheMode = Literal["use", "refresh", "off"]
"""What the client allows: read and write (``use``), write only (``refresh``:
``Cache-Control: no-cache``), neither (``off``: ``no-store``)."""

# Answers that are not kept: an upstream's filter or failure says nothing of the question.
UNCACHED_FINISHES = frozenset({"content_filter", "error", "pause"})
MAX_PER_FRAME = 16  # questions compared for one frame (the most recent kept): ~1 ms


class CachedAnswer(msgspec.Struct, frozen=True, kw_only=True):
    response: ChatResponse
    request_id: str  # the request whose answer it is
    target: TargetRef  # what answered it
    expires_at: float  # monotonic
    size: int  # bytes, as encoded
    max_tokens: int | None  # the limit it was asked with
    cost_usd: float | None  # what it cost then: what each hit saves
    probe: Probe | None = None  # its frame and question's embedding (the semantic level)

    def serves(self, max_tokens: int | None) -> bool:
        """Whether this answer is one a request with ``max_tokens`` could have got."""
        if max_tokens == self.max_tokens:
            return True
        if self.response.finish_reason == "length":  # cut at its limit: that limit only
            return False
        usage = self.response.usage
        return max_tokens is None or (usage is not None and usage.output_tokens <= max_tokens)


class ResponseCache:
    """Entries by key, least recently used first; ``max_bytes`` bounds their sum."""

    def __init__(self, max_bytes: int, max_entry_bytes: int) -> None:
        self._entries: OrderedDict[str, CachedAnswer] = OrderedDict()
        self._frames: dict[str, list[str]] = {}  # frame -> keys of entries with a probe
        self._bytes = 0
        self.max_bytes = max_bytes
        self.max_entry_bytes = max_entry_bytes

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def bytes(self) -> int:
        return self._bytes

    @property
    def bounds(self) -> tuple[int, int]:
        return self.max_bytes, self.max_entry_bytes

    def similar(
        self, probe: Probe, *, threshold: float, now: float
    ) -> tuple[CachedAnswer, float] | None:
        """The kept answer of the same frame whose question is the most similar to
        ``probe``'s, if at least ``threshold``; with its similarity."""
        best: tuple[CachedAnswer, float, str] | None = None
        for key in list(self._frames.get(probe.frame, ())):
            entry = self._entries.get(key)  # not get(): comparing is not using
            if entry is None or entry.probe is None:
                continue
            if entry.expires_at <= now:
                self._drop(key)
                continue
            score = similarity(probe.vector, entry.probe.vector)
            if score >= threshold and (best is None or score > best[1]):
                best = (entry, score, key)
        if best is None:
            return None
        self._entries.move_to_end(best[2])
        return best[0], best[1]

    def get(self, key: str, *, now: float) -> CachedAnswer | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        if entry.expires_at <= now:
            self._drop(key)
            return None
        self._entries.move_to_end(key)
        return entry

    def put(self, key: str, entry: CachedAnswer) -> bool:
        """Keep ``entry`` (replacing the key's); False when it is too large to keep."""
        if entry.size > self.max_entry_bytes or entry.size > self.max_bytes:
            return False
        if key in self._entries:
            self._drop(key)
        self._entries[key] = entry
        self._bytes += entry.size
        if entry.probe is not None:
            keys = self._frames.setdefault(entry.probe.frame, [])
            if key not in keys:
                keys.append(key)
            del keys[:-MAX_PER_FRAME]
        self._shrink()
        return True

    def reconfigure(self, max_bytes: int, max_entry_bytes: int) -> None:
        """New bounds (a reload): entries beyond them go at once."""
        self.max_bytes, self.max_entry_bytes = max_bytes, max_entry_bytes
        self._shrink()

    def _shrink(self) -> None:
        while self._bytes > self.max_bytes and self._entries:
            self._drop(next(iter(self._entries)))

    def _drop(self, key: str) -> None:
        entry = self._entries.pop(key)
        self._bytes -= entry.size
        if entry.probe is not None:
            keys = self._frames.get(entry.probe.frame, [])
            if key in keys:
                keys.remove(key)
            if not keys:
                self._frames.pop(entry.probe.frame, None)

"""Tool calls cut short by the output limit: told apart, and dropped from a whole answer.

An upstream that runs out of output tokens inside a tool call ends with
``finish_reason: length`` and arguments such as ``{"city": "Par``. The answer itself is
legitimate (the client asked for at most that many tokens), so it must never be retried or
refused; but the cut call cannot be run, and formats whose calls carry parsed objects
(Anthropic ``input``, Gemini ``args``) cannot express it at all. gw drops such a call and
keeps ``length`` as the finish reason, as the providers' own APIs end a cut answer.
"""

from __future__ import annotations

from typing import Any

import msgspec

from gw.ir.messages import ToolCall
from gw.ir.response import ChatResponse

_OBJECT = msgspec.json.Decoder(dict[str, Any])


def whole_arguments(arguments: str) -> bool:
    """True when ``arguments`` is empty (a call without parameters) or a JSON object."""
    if not arguments.strip():
        return True
    try:
        _OBJECT.decode(arguments)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return False
    return True


def cut_call_note(name: str, *, dropped: bool) -> str:
    note = f"tool call {name or '(unnamed)'} was cut short by the output limit (finish: length)"
    return f"{note} and dropped" if dropped else note


def drop_cut_calls(response: ChatResponse) -> tuple[ChatResponse, tuple[str, ...]]:
    """``response`` without the calls the output limit cut short, and a note for each.

    Only an answer that ended at the limit is touched: malformed arguments in an answer
    that ended otherwise are the upstream's fault and stay an error where the client's
    format cannot carry them.
    """
    if response.finish_reason != "length":
        return response, ()
    cut = [call for call in response.tool_calls if not whole_arguments(call.arguments)]
    if not cut:
        return response, ()
    kept = tuple(call for call in response.tool_calls if call not in cut)
    blocks = tuple(b for b in response.blocks if not (isinstance(b, ToolCall) and b in cut))
    trimmed = msgspec.structs.replace(response, tool_calls=kept, blocks=blocks)
    return trimmed, tuple(cut_call_note(call.name, dropped=True) for call in cut)


class StreamedCalls:
    """The tool call fragments a stream carried, to tell at its end which calls were cut.

    A streamed call has reached the client fragment by fragment, so it cannot be taken
    back; the trace notes it instead (and a client encoder that holds calls whole, as
    Gemini's does, drops it).
    """

    def __init__(self) -> None:
        self._names: dict[int, str] = {}
        self._arguments: dict[int, list[str]] = {}

    def take(self, index: int, name: str | None, arguments: str) -> None:
        if name:
            self._names[index] = name
        self._arguments.setdefault(index, []).append(arguments)

    def cut_notes(self) -> tuple[str, ...]:
        """A note for each call whose arguments did not come out whole."""
        return tuple(
            cut_call_note(self._names.get(index, ""), dropped=False)
            for index, fragments in self._arguments.items()
            if not whole_arguments("".join(fragments))
        )

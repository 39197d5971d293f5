"""CPU time and memory of a process and all its descendants, read from /proc (Linux).

A gateway may run workers (LiteLLM does), so every figure sums the whole tree under the
process the benchmark started. CPU is utime + stime from ``/proc/<pid>/stat`` in clock
ticks (usually 10 ms), which is why the benchmark divides a whole load step's CPU by its
request count instead of timing single requests.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

_PROC = Path("/proc")
_TICKS_PER_SECOND = os.sysconf("SC_CLK_TCK")
_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")


@dataclass(frozen=True)
class TreeSample:
    """One reading of a process tree: the pids seen, their CPU seconds and memory."""

    pids: tuple[int, ...]
    cpu_seconds: float
    rss_bytes: int
    pss_bytes: int | None  # proportional set size: shared pages split; None if unreadable


def _stat_fields(pid: int) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command name (which may hold spaces)."""
    try:
        text = (_PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    return text[text.rfind(")") + 2 :].split()


def parent_map() -> dict[int, int]:
    """pid -> parent pid for every process visible now."""
    parents: dict[int, int] = {}
    for entry in _PROC.iterdir():
        if not entry.name.isdigit():
            continue
        fields = _stat_fields(int(entry.name))
        if fields is not None:
            parents[int(entry.name)] = int(fields[1])  # field 4, ppid
    return parents


def descendants(root: int, parents: dict[int, int]) -> tuple[int, ...]:
    """``root`` and every process below it in ``parents`` (pid -> ppid), root first."""
    children: dict[int, list[int]] = {}
    for pid, ppid in parents.items():
        children.setdefault(ppid, []).append(pid)
    found, todo = [root], [root]
    while todo:
        for child in children.get(todo.pop(), ()):
            found.append(child)
            todo.append(child)
    return tuple(found)


def tree(root: int) -> tuple[int, ...]:
    """The live process tree under ``root`` (empty when root has exited)."""
    if not (_PROC / str(root)).exists():
        return ()
    return descendants(root, parent_map())


def cpu_ticks(pid: int) -> int:
    """utime + stime of ``pid`` (all its threads), 0 when it has gone."""
    fields = _stat_fields(pid)
    if fields is None:
        return 0
    return int(fields[11]) + int(fields[12])  # fields 14 and 15 of stat(5)


def rss_bytes(pid: int) -> int:
    try:
        resident = (_PROC / str(pid) / "statm").read_text().split()[1]
    except (OSError, IndexError):
        return 0
    return int(resident) * _PAGE_SIZE


def pss_bytes(pid: int) -> int | None:
    try:
        lines = (_PROC / str(pid) / "smaps_rollup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        if line.startswith("Pss:"):
            return int(line.split()[1]) * 1024
    return None


def command(pid: int, words: int = 4) -> str:
    """The first ``words`` words of the command line of ``pid`` (``?`` when it has gone)."""
    try:
        argv = (_PROC / str(pid) / "cmdline").read_bytes().split(b"\0")
    except OSError:
        return "?"
    return " ".join(arg.decode(errors="replace") for arg in argv[:words] if arg)


def sample(root: int) -> TreeSample:
    pids = tree(root)
    pss = [pss_bytes(pid) for pid in pids]
    return TreeSample(
        pids=pids,
        cpu_seconds=sum(cpu_ticks(pid) for pid in pids) / _TICKS_PER_SECOND,
        rss_bytes=sum(rss_bytes(pid) for pid in pids),
        pss_bytes=None if any(p is None for p in pss) else sum(p or 0 for p in pss),
    )


def tick_seconds() -> float:
    """The resolution of ``TreeSample.cpu_seconds``."""
    return 1 / _TICKS_PER_SECOND

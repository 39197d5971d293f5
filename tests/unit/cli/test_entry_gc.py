"""gw/cli/entry.py: the GC is paused while gw loads, and frozen-then-resumed once serving."""

from __future__ import annotations

import gc
import subprocess
import sys

from gw.cli.entry import resume_after_start

# Run in a child: freezing the test process's heap would outlive this test.
AFTER_A_PAUSED_START = """
import gc
from gw.cli.entry import resume_after_start
gc.disable()
objects = [[] for _ in range(1000)]
resume_after_start()
print(gc.isenabled(), gc.get_freeze_count() >= 1000)
"""


def test_a_paused_start_is_frozen_then_collection_resumes() -> None:
    done = subprocess.run(
        [sys.executable, "-c", AFTER_A_PAUSED_START],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert done.stdout.split() == ["True", "True"]


def test_nothing_happens_when_the_gc_was_running() -> None:
    frozen = gc.get_freeze_count()
    resume_after_start()
    assert gc.isenabled()
    assert gc.get_freeze_count() == frozen


def test_the_gw_command_runs_the_entry_point() -> None:
    done = subprocess.run(
        [sys.executable, "-c", "from gw.cli.entry import main; main()", "version"],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "gw " in done.stdout

"""bench.measure.quiet_cpu: a step's CPU is read once the target is idle again, so the
work a step leaves behind counts for it and not for the step after (a real child process,
read from /proc)."""

from __future__ import annotations

import subprocess
import sys

from bench.measure import quiet_cpu
from bench.proctree import tick_seconds

BUSY_THEN_IDLE = """
import time
end = time.process_time() + 0.5
while time.process_time() < end:
    pass
time.sleep(60)
"""


def test_the_reading_waits_until_the_work_is_done() -> None:
    child = subprocess.Popen([sys.executable, "-c", BUSY_THEN_IDLE])
    try:
        # Started at once: an immediate reading would see little of the 0.5 s of work.
        assert quiet_cpu(child.pid, max_wait_s=30.0) >= 0.5 - tick_seconds()
    finally:
        child.kill()
        child.wait()

"""gw/cli/entry.py and gc_pause.py: the GC is paused while gw loads, and frozen-then-resumed once serving."""

from __future__ import annotations

import gc
import subprocess
import sys
from pathlib import Path

from gw.cli.gc_pause import resume_after_start

# Run in a child: freezing the test process's heap would outlive this test.
AFTER_A_PAUSED_START = """
import gc
from gw.cli.gc_pause import resume_after_start
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


# A real `gw serve` through the entry point, in a child: a thread waits for server.json,
# reports the GC's state, then interrupts the server.
SERVE_AND_REPORT = """
import gc, json, os, signal, sys, threading, time
from pathlib import Path
from gw.cli.entry import main
state = Path(sys.argv[1])

def report():
    for _ in range(6000):
        if (state / "server.json").exists():
            break
        time.sleep(0.01)
    # One write: print() writes its parts one by one, and the server's banner, printed
    # as server.json appears, could land between them.
    sys.stdout.write(f"REPORT {gc.isenabled()} {gc.get_freeze_count() > 10000}\\n")
    sys.stdout.flush()
    os.kill(os.getpid(), signal.SIGINT)

threading.Thread(target=report, daemon=True).start()
sys.argv = ["gw", "serve", "--port", "0", "--state-dir", str(state)]
main()
"""


def test_a_serving_gw_has_its_gc_on_and_its_start_frozen(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SERVE_AND_REPORT, str(tmp_path / "state")],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "REPORT True True\n" in done.stdout, done.stdout + done.stderr


def test_a_failed_serve_gives_the_gc_back(tmp_path: Path) -> None:
    config = tmp_path / "gw.yaml"
    config.write_text("server: {port: nope}\n")
    code = (
        "import gc, sys\n"
        "from gw.cli.main import app\n"
        f"sys.argv = ['gw', 'serve', '--config', {str(config)!r}]\n"
        "try:\n    app()\nexcept SystemExit:\n    pass\n"
        "print('GC', gc.isenabled())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=60
    )
    assert done.stdout.strip().splitlines()[-1] == "GC True", done.stdout + done.stderr

"""Several processes changing the vault at once never lose each other's writes: every
change is a read-modify-write under one exclusive lock."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from gw.vault import Vault

WRITER = """
import sys
from pathlib import Path
from gw.vault import OsKeyring, Vault

home, writer, count = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
vault = Vault(home, {}, lambda: OsKeyring.disabled("test"))
for index in range(count):
    vault.set(f"w{writer}-{index}", f"sk-{writer}-{index}")
"""
WRITERS, EACH = 6, 10


def test_concurrent_writers_keep_every_name(vault: Vault, home: Path) -> None:
    vault.init()
    vault.set("existing", "sk-existing")
    script = textwrap.dedent(WRITER)

    processes = [
        subprocess.Popen([sys.executable, "-c", script, str(home), str(writer), str(EACH)])
        for writer in range(WRITERS)
    ]
    codes = [process.wait(timeout=120) for process in processes]

    assert codes == [0] * WRITERS
    secrets = vault.read()
    expected = {f"w{w}-{i}": f"sk-{w}-{i}" for w in range(WRITERS) for i in range(EACH)}
    assert dict(secrets) == {"existing": "sk-existing", **expected}

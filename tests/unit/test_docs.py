"""What the docs promise about the repository: README's links lead somewhere, and every
invariant the code cites by number is written down in docs/design.md. (Links inside docs/
are checked by `mkdocs build --strict` in ./scripts/test.)"""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LINK = re.compile(r"\]\(([^)\s]+)\)")
CITATION = re.compile(r"\binvariants? (\d+)", re.IGNORECASE)
NUMBERED = re.compile(r"^(\d+)\. \*\*", re.MULTILINE)


def test_every_relative_link_of_the_readme_resolves() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    relative = [
        target
        for target in LINK.findall(readme)
        if not target.startswith(("http://", "https://", "#", "mailto:"))
    ]
    assert relative, "the README links into docs/"
    missing = [t for t in relative if not (REPO / t.split("#", 1)[0]).exists()]
    assert not missing, f"README.md links to files that do not exist: {missing}"


def test_every_cited_invariant_is_numbered_in_the_design() -> None:
    cited = {
        int(number)
        for path in (REPO / "gw").rglob("*.py")
        for number in CITATION.findall(path.read_text(encoding="utf-8"))
    }
    design = (REPO / "docs" / "design.md").read_text(encoding="utf-8")
    invariants = design.split("## Invariants", 1)[1].split("\n## ", 1)[0]
    numbered = {int(number) for number in NUMBERED.findall(invariants)}
    assert cited, "the code cites invariants"
    assert cited <= numbered, f"cited but not in docs/design.md: {sorted(cited - numbered)}"
    assert numbered == set(range(1, max(numbered) + 1)), "invariants are numbered 1..n"

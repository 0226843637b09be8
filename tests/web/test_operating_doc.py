"""docs/operating.md's table of environment variables is the list the code reads, both ways."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
READERS = [*sorted(p for pkg in ("app", "scenes", "engine") for p in (ROOT / pkg).rglob("*.py")),
           ROOT / "scripts" / "serve.sh"]
NAME = re.compile(r"\b(BUILD_KAFKA_[A-Z0-9_]+|DATABASE_URL|PORT)\b")


def variables_read() -> set[str]:
    """Every BUILD_KAFKA_* name the code mentions (the prefix is ours, so any mention is a setting),
    and the two unprefixed ones where a line looks them up in the environment."""
    found = set()
    for path in READERS:
        for line in path.read_text(encoding="utf-8").splitlines():
            names = set(NAME.findall(line))
            if not re.search(r"environ|env\.get|getenv|env_number|\$\{", line):
                names = {n for n in names if n.startswith("BUILD_KAFKA_")}
            found |= names
    return found


def variables_documented(text: str) -> set[str]:
    section = text.split("## Configuration", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    return {name for row in rows for name in NAME.findall(row.split("|")[1])}


def test_every_variable_the_code_reads_is_documented_and_no_other():
    documented = variables_documented((ROOT / "docs" / "operating.md").read_text(encoding="utf-8"))
    read = variables_read()
    assert read - documented == set(), "read by the code but not in docs/operating.md's table"
    assert documented - read == set(), "in docs/operating.md's table but read by no code"


def test_the_check_sees_a_missing_row():
    text = "## Configuration\n\n| variable | default |\n|---|---|\n| `BUILD_KAFKA_HOST` | x |\n\n## Next\n"
    assert variables_documented(text) == {"BUILD_KAFKA_HOST"}
    assert "BUILD_KAFKA_PORT" in variables_read() - variables_documented(text)

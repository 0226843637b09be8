"""docs/operating.md's table of environment variables is the list the code reads, both ways."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
READERS = [*sorted((ROOT / "app").rglob("*.py")), ROOT / "scripts" / "serve.sh"]
NAME = re.compile(r"\b(BUILD_KAFKA_[A-Z0-9_]+|DATABASE_URL|PORT)\b")


def variables_read() -> set[str]:
    """Every variable name the app and the serve script mention in a lookup of the environment."""
    found = set()
    for path in READERS:
        for line in path.read_text(encoding="utf-8").splitlines():
            if re.search(r"environ|env\.get|getenv|_env_number|\$\{", line):
                found |= set(NAME.findall(line))
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

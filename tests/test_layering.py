"""The import layering is one-way: app -> scenes -> engine, and pipeline -> engine.

The engine is a pure function of the scenario and must not know who calls it; scenes are data and
their loaders, read by the app; the offline pipeline uses the engine and nothing of the web app.
Every import in every module is checked, including imports inside functions."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
OURS = {"app", "scenes", "engine", "pipeline"}
ALLOWED = {
    "engine": {"engine"},
    "scenes": {"scenes", "engine"},
    "app": {"app", "scenes", "engine"},
    "pipeline": {"pipeline", "engine"},
}


def imported_packages(path: Path) -> list[tuple[int, str]]:
    """(line, top-level package) of every absolute import of one of our packages in a file."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue  # relative imports stay inside their own package
        out += [(node.lineno, name.split(".")[0]) for name in names if name.split(".")[0] in OURS]
    return out


def modules() -> list[Path]:
    return sorted(p for pkg in ALLOWED for p in (ROOT / pkg).rglob("*.py"))


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_follow_the_layering(path):
    layer = path.relative_to(ROOT).parts[0]
    wrong = [(line, pkg) for line, pkg in imported_packages(path) if pkg not in ALLOWED[layer]]
    assert not wrong, f"{layer} may import only {sorted(ALLOWED[layer])}; found " + ", ".join(
        f"{pkg} at line {line}" for line, pkg in wrong
    )


def test_the_check_sees_a_wrong_import(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from app.main import app\n    import scenes.model\n", encoding="utf-8")
    assert imported_packages(bad) == [(2, "app"), (3, "scenes")]

"""Golden traces: the engine's step texts for every beat, committed under tests/scenes/golden/.

    python -m scenes.golden            rewrite every golden file from the current engine
    python -m scenes.golden --check    compare only; exit 1 and list the files that differ
    python -m scenes.golden 05         only scene 05 (ids may be combined with --check)

Each file is `<scene>-<beat>.txt` with one line per engine step: "t_ms kind text". Regenerate
only deliberately, after checking that the new behaviour is the right one. A scene of a draft
directory (BUILD_KAFKA_SCENES_DIR, see scenes/__init__.py) keeps its files in that directory's
`golden/`, so drafting one writes nothing into the checkout.
"""

from __future__ import annotations

import sys
from pathlib import Path

GOLDEN_DIR = Path(__file__).resolve().parent.parent / "tests" / "scenes" / "golden"


def trace(scene_id: str, beat_id: str) -> str:
    """The golden text of one beat, as the current engine produces it."""
    from engine import simulate
    from scenes import load_scene

    scene = load_scene(scene_id)
    result = simulate(scene.scenario_for(beat_id), steps=True)
    lines = [f"{s['t_ms']} {s['kind']} {' '.join(str(s['text']).split())}" for s in result["steps"]]
    return "\n".join(lines) + "\n"


def golden_path(scene_id: str, beat_id: str) -> Path:
    from scenes import DATA_DIR, scene_file

    source = scene_file(scene_id).parent
    directory = GOLDEN_DIR if source == DATA_DIR else source / "golden"
    return directory / f"{scene_id}-{beat_id}.txt"


def main(argv: list[str] | None = None) -> int:
    from scenes import list_scenes, load_scene

    args = list(sys.argv[1:] if argv is None else argv)
    check = "--check" in args
    wanted = [a for a in args if not a.startswith("-")]
    unknown = [a for a in args if a.startswith("-") and a != "--check"]
    if unknown:
        print(f"unknown option(s): {' '.join(unknown)}; usage: python -m scenes.golden [--check] [scene ...]",
              file=sys.stderr)
        return 2
    built = [s.id for s in list_scenes() if s.built]
    for sid in wanted:
        if sid not in built:
            print(f"no built scene {sid!r} (built: {', '.join(built)})", file=sys.stderr)
            return 2
    differ: list[str] = []
    written = 0
    places: set[Path] = set()
    for sid in wanted or built:
        for beat in load_scene(sid).beats:
            path = golden_path(sid, beat.id)
            places.add(path.parent)
            text = trace(sid, beat.id)
            old = path.read_text(encoding="utf-8") if path.exists() else None
            if old == text:
                continue
            if check:
                differ.append(str(path))
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text, encoding="utf-8")
                written += 1
    if check:
        for p in differ:
            print(f"differs: {p}")
        return 1 if differ else 0
    print(f"wrote {written} golden file(s) in {', '.join(sorted(map(str, places))) or GOLDEN_DIR}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

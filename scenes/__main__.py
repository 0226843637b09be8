"""Load and validate scenes: `python -m scenes [scene ...]` (every built scene without ids).

Prints one line per scene with where it was read from and what it holds, or the validation
errors of each scene that does not load, and exits 1 if any did not. With BUILD_KAFKA_SCENES_DIR
set, the draft directory's scenes are checked too (see scenes/__init__.py).
"""

from __future__ import annotations

import sys

from pydantic import ValidationError


def main(argv: list[str] | None = None) -> int:
    import scenes

    args = list(sys.argv[1:] if argv is None else argv)
    if any(a.startswith("-") for a in args):
        print("usage: python -m scenes [scene ...]", file=sys.stderr)
        return 2
    built = [s.id for s in scenes.list_scenes() if s.built]
    unknown = [a for a in args if a not in built]
    if unknown:
        print(f"no built scene {', '.join(map(repr, unknown))} (built: {', '.join(built)})", file=sys.stderr)
        return 2
    failed = 0
    for sid in args or built:
        try:
            scene = scenes.load_scene(sid)
        except (ValidationError, ValueError) as exc:
            failed += 1
            print(f"{sid}: does not load from {scenes.scene_file(sid)}\n{exc}")
            continue
        print(f"{sid}: {len(scene.beats)} beat(s), {len(scene.knobs)} knob(s), {len(scene.qa)} Q&A, "
              f"{len(scene.pseudocode)} pseudocode block(s), from {scenes.scene_file(sid)}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())

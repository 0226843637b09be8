"""Write data/curves/: latency.json, loss.json and the schema they follow (schema.json)."""

from __future__ import annotations

import json
from pathlib import Path

SCHEMA_VERSION = 1


def write_curves(out: Path, records: list[dict], meta: dict) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for kind in ("latency", "loss"):
        recs = sorted(
            (r for r in records if r["knobs"]["kind"] == kind),
            key=lambda r: json.dumps(r["knobs"], sort_keys=True),
        )
        if not recs:
            continue
        doc = {"schema_version": SCHEMA_VERSION, "kind": kind, **meta, "points": recs}
        text = json.dumps(doc, separators=(",", ":"), sort_keys=True, allow_nan=False)
        (out / f"{kind}.json").write_text(text + "\n")

"""Schemathesis over POST /api/v1/simulate, from the engine's own scenario models.

The OpenAPI document is built here from `engine.scenario.Scenario`'s JSON schema (pydantic), so
the contract is stated once, in the engine. The script writes it to a temporary file, starts
`python -m app.serve`, and runs `schemathesis run` with the not_a_server_error check (no 5xx
other than the deadline's 503, which the document declares) over generated bodies, valid and
invalid. Needs the `bench` extra (`pip install -e '.[bench]'`).

Run: `.venv/bin/python bench/schemathesis_api.py [--max-examples 300]`.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the engine package, not bench/engine.py
sys.path.insert(1, str(Path(__file__).resolve().parent))
import _server  # noqa: E402

from engine.scenario import Scenario  # noqa: E402


def openapi() -> dict:
    """An OpenAPI 3.1 document for the simulate API (3.1 takes JSON Schema as pydantic writes it)."""
    schema = Scenario.model_json_schema(by_alias=True, ref_template="#/components/schemas/{model}")
    components = schema.pop("$defs", {})
    components["Scenario"] = schema
    error = {"type": "object", "properties": {"error": {"type": "string"}, "problems": {"type": "array"}}}
    json_error = {"application/json": {"schema": error}}
    responses = {
        "200": {"description": "the result", "content": {"application/json": {"schema": {"type": "object"}}}},
        "413": {"description": "the body is too large", "content": json_error},
        "415": {"description": "not JSON", "content": json_error},
        "422": {"description": "an invalid scenario, or one over a cap", "content": json_error},
        "503": {"description": "past the per-request deadline; try again", "content": json_error},
    }
    return {
        "openapi": "3.1.0",
        "info": {"title": "Build Kafka simulate API", "version": "1"},
        "paths": {
            "/api/v1/simulate": {
                "post": {
                    "parameters": [{"name": "steps", "in": "query", "required": False,
                                    "schema": {"type": "boolean"}}],  # fmt: skip
                    "requestBody": {"required": True, "content": {"application/json": {
                        "schema": {"$ref": "#/components/schemas/Scenario"}}}},  # fmt: skip
                    "responses": responses,
                }
            }
        },
        "components": {"schemas": components},
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-examples", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    tool = shutil.which("schemathesis") or str(Path(sys.executable).parent / "schemathesis")
    with tempfile.TemporaryDirectory() as tmp:
        document = Path(tmp) / "openapi-simulate.json"
        document.write_text(json.dumps(openapi()))
        port = _server.free_port()
        with _server.running(None, port):
            command = [tool, "run", str(document), "--url", f"http://127.0.0.1:{port}",
                       "--checks", "not_a_server_error", "--max-examples", str(args.max_examples),
                       "--seed", str(args.seed), "--request-timeout", "10"]  # fmt: skip
            print("$", " ".join(command))
            return subprocess.call(command)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

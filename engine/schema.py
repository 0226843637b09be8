"""The scenario's JSON Schema, generated from the pydantic models in engine/scenario.py.

The models are the one definition of the format: `POST /api/v1/simulate` validates with them, the
app serves this schema (and FastAPI's OpenAPI document refers to it), `python -m engine schema`
prints it, and docs/scenario-format.md's field tables are generated from it.
"""

from __future__ import annotations

from typing import Any

from .scenario import Scenario

JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
FORMAT_PAGE = "docs/scenario-format.md"


def scenario_json_schema() -> dict[str, Any]:
    """A fresh JSON Schema (draft 2020-12) of one scenario document, in the contract's field names
    (the dotted Kafka config keys, not the Python attribute names)."""
    schema = Scenario.model_json_schema(by_alias=True, mode="validation")
    return {
        "$schema": JSON_SCHEMA_DIALECT,
        "title": "Build Kafka scenario",
        "description": f"One simulation: the cluster, the clients and the actions to run. See {FORMAT_PAGE}.",
        **{k: v for k, v in schema.items() if k not in ("title", "description")},
    }

"""The public HTTP API's description: what `/openapi.json` serves, and the simulate route's part.

    simulate_openapi(...)       openapi_extra of POST /api/v1/simulate (body, query, responses)
    openapi_document(app)       FastAPI's OpenAPI 3.1 document of the public routes, with the
                                scenario's JSON Schema in components/schemas

The simulate handler reads its body itself (size cap, content type, JSON depth: see
app/main.py), so FastAPI cannot infer the body's schema from a parameter; `openapi_extra` states
it. The body's schema is the engine's own (`engine.schema.scenario_json_schema()`, generated from
the pydantic models): its `$defs` move to `components/schemas` and every `#/$defs/X` becomes
`#/components/schemas/X`, so the document is one self-contained file.

Only the public API is described: the simulate route, the schema, the health check. HTML pages,
workshop endpoints (a browser's, not an API) and the docs pages are left out.
"""

from __future__ import annotations

import copy
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from engine.schema import scenario_json_schema

PUBLIC_PATHS = ("/api/v1/simulate", "/api/v1/scenario.schema.json", "/healthz")
SCHEMA_PATH = "/api/v1/scenario.schema.json"
OPENAPI_PATH = "/openapi.json"
SCENARIO_REF = "#/components/schemas/Scenario"
EXAMPLE_SCENARIO = {"version": 1, "actions": [{"do": "produce", "records": ["a"]}, {"do": "settle"}]}
ERROR_REF = "#/components/schemas/Error"
DOCS_PAGE = "/docs/http-api"

PROBLEM_SCHEMA: dict[str, Any] = {
    "title": "Problem",
    "type": "object",
    "required": ["path", "message"],
    "properties": {
        "path": {
            "type": "string",
            "description": "Where the problem is: a field path such as `actions[0].broker`, "
            "`actions` for the actions as a whole (a run over a cap), `$` for the whole body, "
            "`?steps` for the query parameter.",
        },
        "message": {"type": "string", "description": "What is wrong, in plain words."},
    },
}
ERROR_SCHEMA: dict[str, Any] = {
    "title": "Error",
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "string",
            "description": "A fixed code: invalid_scenario, payload_too_large, unsupported_media_type, "
            "try_again_shortly; not_found and method_not_allowed for an address or method the API "
            "does not have.",
        },
        "problems": {"type": "array", "items": {"$ref": "#/components/schemas/Problem"}},
        "budget": {
            "type": "string",
            "description": "Only when a run went over a cap: which one (events, steps, sim_time, "
            "result_bytes; deadline on a 503).",
        },
        "detail": {
            "type": "string",
            "description": "The reason in plain words, on a 503 and on errors that have no problems list.",
        },
    },
}
RESULT_SCHEMA: dict[str, Any] = {
    "title": "SimulateResult",
    "description": f"The run's result. Fields are described on {DOCS_PAGE} and in the scenario format "
    "page; scenarios with consumers, groups or transactions add more fields.",
    "type": "object",
    "required": [
        "version", "final", "produce", "acked_records", "lost_acked_records", "visible_records",
        "duplicate_records", "step_count", "profile", "proposals", "seed",
    ],  # fmt: skip
    "properties": {
        "version": {"type": "integer"},
        "final": {"type": "object", "description": "The cluster's state at the end of the run."},
        "produce": {"type": "array", "items": {"type": "object"}, "description": "One entry per produce."},
        "acked_records": {"type": "array", "description": "Records the producer saw acknowledged."},
        "lost_acked_records": {"type": "array", "description": "Acknowledged records the cluster lost."},
        "visible_records": {"type": "array", "description": "Records a consumer can read at the end."},
        "duplicate_records": {"type": "array"},
        "step_count": {"type": "integer"},
        "profile": {"type": "object", "description": "The Kafka version profile the run used."},
        "proposals": {"type": "array", "items": {"type": "string"}},
        "seed": {"type": "integer"},
        "steps": {"type": "array", "items": {"type": "object"}, "description": "Only with steps=true."},
    },
    "additionalProperties": True,
}


def _json_error(description: str, examples: dict[str, Any], headers: dict[str, Any] | None = None):
    response: dict[str, Any] = {
        "description": description,
        "content": {
            "application/json": {
                "schema": {"$ref": ERROR_REF},
                "examples": {name: {"value": value} for name, value in examples.items()},
            }
        },
    }
    if headers:
        response["headers"] = headers
    return response


def simulate_openapi(max_body_bytes: int, deadline_s: float, max_events: int) -> dict[str, Any]:
    """openapi_extra of POST /api/v1/simulate, with this server's caps in its texts and examples."""
    kib = f"{max_body_bytes / 1024:g} KiB"
    too_big = f"the body is larger than {max_body_bytes} bytes"
    over_events = (
        f"the scenario needs more than {max_events} engine events (all partitions together); shorten it "
        "(fewer actions, partitions or less simulated time)"
    )
    deadline = (
        f"the run needed more than the {deadline_s:g} s of computing time this server gives one "
        "request; try again, or shorten the scenario"
    )
    return {
        "parameters": [
            {
                "name": "steps",
                "in": "query",
                "required": False,
                "description": "true (or 1) adds the list of engine steps to the result.",
                "schema": {"type": "string", "enum": ["true", "false", "1", "0"], "default": "false"},
            }
        ],
        "requestBody": {
            "required": True,
            "description": f"One scenario as JSON (Content-Type: application/json), at most {kib}.",
            "content": {
                "application/json": {
                    "schema": {"$ref": SCENARIO_REF},
                    "example": EXAMPLE_SCENARIO,
                }
            },
        },
        "responses": {
            "200": {
                "description": "The run's result.",
                "content": {
                    "application/json": {
                        "schema": {"$ref": "#/components/schemas/SimulateResult"},
                        "example": {
                            "version": 1,
                            "acked_records": ["a"],
                            "lost_acked_records": [],
                            "visible_records": ["a"],
                            "duplicate_records": [],
                            "step_count": 12,
                            "proposals": [],
                            "seed": 0,
                        },
                    }
                },
            },
            "413": _json_error(
                f"The body is larger than {kib}.",
                {
                    "too_large": {
                        "error": "payload_too_large",
                        "problems": [{"path": "$", "message": too_big}],
                    }
                },
            ),
            "415": _json_error(
                "The body is not sent as application/json.",
                {
                    "not_json": {
                        "error": "unsupported_media_type",
                        "problems": [
                            {"path": "$", "message": "send the scenario as Content-Type: application/json"}
                        ],
                    }
                },
            ),
            "422": _json_error(
                "The scenario does not validate, or the run went over a cap (then `budget` names it).",
                {
                    "invalid_field": {
                        "error": "invalid_scenario",
                        "problems": [
                            {"path": "actions[0].broker", "message": "broker 7 is not in the cluster"}
                        ],
                    },
                    "over_a_cap": {
                        "error": "invalid_scenario",
                        "budget": "events",
                        "problems": [{"path": "actions", "message": over_events}],
                    },
                },
            ),
            "503": _json_error(
                f"The run did not finish within the server's per-request deadline ({deadline_s:g} s); "
                "the same request may succeed on a quieter server.",
                {
                    "deadline": {
                        "error": "try_again_shortly",
                        "budget": "deadline",
                        "detail": deadline,
                        "problems": [{"path": "actions", "message": deadline}],
                    }
                },
                headers={"Retry-After": {"description": "Seconds to wait.", "schema": {"type": "integer"}}},
            ),
        },
    }

SCHEMA_OPENAPI: dict[str, Any] = {
    "responses": {
        "200": {
            "description": "The scenario's JSON Schema (draft 2020-12), the same as "
            "`python -m engine schema` prints.",
            "content": {"application/json": {"schema": {"type": "object"}}},
        }
    }
}

HEALTHZ_OPENAPI: dict[str, Any] = {
    "responses": {
        "200": {
            "description": "The server process is up. It answers without waiting for an engine worker.",
            "content": {
                "application/json": {
                    "schema": {
                        "type": "object",
                        "required": ["ok"],
                        "properties": {"ok": {"type": "boolean", "const": True}},
                    },
                    "example": {"ok": True},
                }
            },
        }
    }
}


def _moved(ref: Any) -> Any:
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return "#/components/schemas/" + ref.removeprefix("#/$defs/")
    return ref


def _rewrite_refs(node: Any) -> Any:
    """`#/$defs/X` -> `#/components/schemas/X` in every `$ref` and discriminator mapping."""
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            if key == "$ref":
                out[key] = _moved(value)
            elif key == "discriminator" and isinstance(value, dict) and "mapping" in value:
                out[key] = {**value, "mapping": {k: _moved(v) for k, v in dict(value["mapping"]).items()}}
            else:
                out[key] = _rewrite_refs(value)
        return out
    if isinstance(node, list):
        return [_rewrite_refs(v) for v in node]
    return node


def scenario_components() -> dict[str, Any]:
    """components/schemas for the scenario: `Scenario` and each of its `$defs`."""
    schema = scenario_json_schema()  # a fresh document: popping from it touches nothing shared
    defs = schema.pop("$defs", {})
    schema.pop("$schema", None)  # the document's dialect is OpenAPI 3.1's (JSON Schema 2020-12)
    components = {name: _rewrite_refs(value) for name, value in defs.items()}
    if "Scenario" in components:
        raise RuntimeError("the scenario's $defs already name a schema Scenario")
    components["Scenario"] = _rewrite_refs(schema)
    return components


def openapi_document(app: FastAPI) -> dict[str, Any]:
    routes = sorted(
        (r for r in app.routes if getattr(r, "path", None) in PUBLIC_PATHS),
        key=lambda r: PUBLIC_PATHS.index(r.path),  # type: ignore[attr-defined]
    )
    document = get_openapi(
        title="Build Kafka API",
        version=app.version,
        openapi_version="3.1.0",
        summary="Run the Build Kafka simulator over HTTP.",
        description=(
            "POST a scenario to /api/v1/simulate and get the run's result. The scenario's JSON "
            f"Schema is at {SCHEMA_PATH}; the format and every error are described at {DOCS_PAGE}."
        ),
        routes=routes,
    )
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    ours = {
        **scenario_components(),
        "Problem": PROBLEM_SCHEMA,
        "Error": ERROR_SCHEMA,
        "SimulateResult": RESULT_SCHEMA,
    }
    clash = set(schemas) & set(ours)
    if clash:
        raise RuntimeError(f"OpenAPI components defined twice: {sorted(clash)}")
    schemas.update(copy.deepcopy(ours))
    return document

"""The turn API's JSON Schema, generated from its models (`hologram.api.turn`): the params of every method
and every event, published as docs/turn-api.schema.json (`make schema`; tests/docs hold the file to the models).

Separate from `hologram.api.turn` because only the schema's readers need it — `make schema`, the docs test,
`hologram schema turn-api` — not the clients and the kernel that import the contract on every start.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import TypeAdapter

from hologram.api import params as params_api
from hologram.api import turn as api

_DEFS = "#/$defs/{model}"


def turn_api_json_schema() -> dict[str, Any]:
    """One document: ``methods`` (name → its params' schema), ``notifications`` (``turn/event`` → one of
    the events, by ``type``), and the models in ``$defs``."""
    inputs: list[tuple[str, Any, TypeAdapter[Any]]] = []
    for method, model in params_api.METHOD_PARAMS.items():
        inputs.append((method, "validation", TypeAdapter(model)))
    for kind, event in api.EVENT_TYPES.items():
        inputs.append((kind, "validation", TypeAdapter(event)))
    refs, defs = TypeAdapter.json_schemas(inputs, ref_template=_DEFS)
    events = [refs[(kind, "validation")] for kind in api.EVENT_TYPES]
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Hologram turn API",
        "description": (
            "Methods a client calls (JSON-RPC 2.0 on the control socket; the kernel.turns facility for plugins) "
            "and the events the kernel sends as turn/event notifications. docs/protocol.md, section 9."
        ),
        "version": api.TURN_API_VERSION,
        "methods": {method: {"params": refs[(method, "validation")]} for method in params_api.METHOD_PARAMS},
        "notifications": {
            api.TURN_EVENT: {
                "params": {
                    "oneOf": events,
                    "discriminator": {
                        "propertyName": "type",
                        "mapping": {k: refs[(k, "validation")]["$ref"] for k in api.EVENT_TYPES},
                    },
                }
            }
        },
        "$defs": defs.get("$defs", {}),
    }


def turn_api_json_schema_text() -> str:
    return json.dumps(turn_api_json_schema(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"

"""The manifest's JSON Schema, published in docs/ so editors can complete and check manifests.

Generated from the model's dataclasses — their field types, defaults, the constraints and descriptions in
their metadata (`hologram._fields.meta`) — in the shape pydantic generated it before the model left
pydantic, so docs/manifest.schema.json did not change (`make schema` rewrites it; a test compares).
Only `make schema` and the tests call it.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import types
import typing
from typing import Any, Literal, Union

from hologram.manifest.model import Manifest

_JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean"}
_CONSTRAINTS = {
    "gt": "exclusiveMinimum",
    "ge": "minimum",
    "lt": "exclusiveMaximum",
    "le": "maximum",
    "pattern": "pattern",
}


def manifest_json_schema() -> dict[str, Any]:
    definitions: dict[str, Any] = {}
    schema = _model_schema(Manifest, definitions)
    schema["title"] = Manifest.schema_title
    schema["$id"] = Manifest.schema_id
    schema["$defs"] = definitions
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return schema


def manifest_json_schema_text() -> str:
    return json.dumps(manifest_json_schema(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _description(cls: type[Any]) -> str | None:
    """The class's docstring; None for the signature `dataclass` writes when there is none."""
    doc = cls.__doc__
    if not doc or doc.startswith(f"{cls.__name__}("):
        return None
    return inspect.cleandoc(doc)


def _model_schema(cls: type[Any], definitions: dict[str, Any]) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for f in dataclasses.fields(cls):
        properties[f.name] = _field_schema(f, hints[f.name], definitions)
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            required.append(f.name)
    schema: dict[str, Any] = {"type": "object", "title": cls.__name__, "properties": properties}
    if required:
        schema["required"] = required
    if getattr(cls, "_extra", "ignore") == "forbid":
        schema["additionalProperties"] = False
    description = _description(cls)
    if description:
        schema["description"] = description
    return schema


def _field_schema(f: dataclasses.Field[Any], hint: Any, definitions: dict[str, Any]) -> dict[str, Any]:
    options = typing.get_args(hint) if typing.get_origin(hint) in (Union, types.UnionType) else (hint,)
    inner = [o for o in options if o is not type(None)]
    (base,) = inner
    schema = _type_schema(base, definitions)
    for key, word in _CONSTRAINTS.items():
        if key in f.metadata:
            schema[word] = f.metadata[key]
    for key in ("min_length", "max_length"):
        if key in f.metadata:
            prefix = "min" if key == "min_length" else "max"
            schema[prefix + ("Length" if schema.get("type") == "string" else "Items")] = f.metadata[key]
    if len(inner) < len(options):
        schema = {"anyOf": [schema, {"type": "null"}]}
    is_model = dataclasses.is_dataclass(base)
    if not is_model:  # a field holding a model is named by its definition, not titled
        schema["title"] = f.name.replace("_", " ").title()
    if "description" in f.metadata:
        schema["description"] = f.metadata["description"]
    if f.default is not dataclasses.MISSING:
        schema["default"] = f.default
    schema.update(f.metadata.get("schema", {}))
    return schema


def _type_schema(hint: Any, definitions: dict[str, Any]) -> dict[str, Any]:
    if hint is Any:
        return {}
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is Literal:
        kind = _JSON_TYPES[type(args[0])]
        return {"const": args[0], "type": kind} if len(args) == 1 else {"enum": list(args), "type": kind}
    if origin is dict:
        item = _type_schema(args[1], definitions)
        return {"type": "object", "additionalProperties": item or True}
    if origin is list:
        return {"type": "array", "items": _type_schema(args[0], definitions)}
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        if hint.__name__ not in definitions:
            definitions[hint.__name__] = {}  # placeholder first: a model met twice is defined once
            definitions[hint.__name__] = _model_schema(hint, definitions)
        return {"$ref": f"#/$defs/{hint.__name__}"}
    return {"type": _JSON_TYPES[hint]}

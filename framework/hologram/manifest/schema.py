"""The manifest's JSON Schema, published in docs/ so editors can complete and check manifests."""

from __future__ import annotations

import json
from typing import Any

from hologram.manifest.model import Manifest


def manifest_json_schema() -> dict[str, Any]:
    schema = Manifest.model_json_schema(mode="validation")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return schema


def manifest_json_schema_text() -> str:
    return json.dumps(manifest_json_schema(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"

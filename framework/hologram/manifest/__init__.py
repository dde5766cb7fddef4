"""Plugin manifests: the model (a public contract), loading with located errors, and the JSON Schema."""

from hologram.base.protocol import STAGE_NAMES
from hologram.manifest.load import LoadedManifest, content_hash, load_manifest, parse_manifest
from hologram.manifest.model import (
    MANIFEST_VERSION,
    TOOL_STAGES,
    Facilities,
    Manifest,
    PluginInfo,
    RunSpec,
    StageHook,
    Stages,
    Start,
    Tool,
    relevant_content,
)
from hologram.manifest.schema import manifest_json_schema, manifest_json_schema_text

__all__ = [
    "MANIFEST_VERSION",
    "STAGE_NAMES",
    "TOOL_STAGES",
    "Facilities",
    "LoadedManifest",
    "Manifest",
    "PluginInfo",
    "RunSpec",
    "StageHook",
    "Stages",
    "Start",
    "Tool",
    "content_hash",
    "load_manifest",
    "manifest_json_schema",
    "manifest_json_schema_text",
    "parse_manifest",
    "relevant_content",
]

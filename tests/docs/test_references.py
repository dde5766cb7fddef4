"""The generated references are what the code says: docs/manifest.md's key table is the manifest's JSON Schema,
docs/sdk.md is the SDK's and the conformance kit's docstrings (tools/docs_reference.py writes both).

Mutation checks (done): a word changed in `Plugin.on_stop`'s docstring, and the description of the manifest's
``start.timeout_s``, each turned ``test_each_generated_page_is_current`` red naming the stale page.
"""

from __future__ import annotations

from docs_reference import MANIFEST_DOC, SDK_DOC, manifest_doc, manifest_rows, sdk_doc
from hologram.manifest import manifest_json_schema


def test_each_generated_page_is_current() -> None:
    manifest_page = MANIFEST_DOC.read_text(encoding="utf-8")
    assert manifest_page == manifest_doc(manifest_page), (
        "docs/manifest.md: run .venv/bin/python tools/docs_reference.py"
    )
    assert SDK_DOC.read_text(encoding="utf-8") == sdk_doc(), "docs/sdk.md: run .venv/bin/python tools/docs_reference.py"


def test_every_key_of_the_schema_has_a_row_with_a_meaning() -> None:
    rows = {key: meaning for key, _kind, _default, meaning in manifest_rows(manifest_json_schema())}
    for key in (
        "plugin.name",
        "plugin.run.command",
        "facilities.requires",
        "stages.STAGE.order",
        "tools[].parameters",
        "start.timeout_s",
        "config",
    ):
        assert rows.get(key), f"{key}: no row, or no meaning (a Field without a description)"
    assert all(rows.values()), [key for key, meaning in rows.items() if not meaning]


def test_the_sdk_page_covers_the_public_names() -> None:
    import hologram.sdk
    import hologram.testing

    page = SDK_DOC.read_text(encoding="utf-8")
    public = {n for n in hologram.sdk.__all__ if n != "testing"} | set(hologram.testing.__all__)
    missing = sorted(name for name in public if f"### `{name}`" not in page)
    assert not missing, f"add them to SDK_SECTIONS in tools/docs_reference.py: {missing}"

"""The lock's TOML emitter must always produce TOML that parses back to the same data."""

from __future__ import annotations

from typing import Any

import tomli
from hypothesis import given
from hypothesis import strategies as st

from hologram._toml_writer import dumps

keys = st.text(min_size=1, max_size=12)
scalars = st.one_of(st.text(max_size=20), st.booleans(), st.integers(-(2**63), 2**63 - 1), st.floats(allow_nan=False))
values = st.recursive(
    st.one_of(scalars, st.lists(scalars, max_size=4)),
    lambda inner: st.dictionaries(keys, inner, max_size=5),
    max_leaves=12,
)
tables = st.dictionaries(keys, values, max_size=6)
documents = st.dictionaries(keys, st.one_of(values, st.lists(tables, min_size=1, max_size=3)), max_size=6)


@given(documents)
def test_round_trip(document: dict[str, Any]) -> None:
    assert tomli.loads(dumps(document)) == document

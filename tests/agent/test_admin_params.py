"""An admin method's params are a pydantic model made from its signature (hologram/kernel/admin.py): typed
params are converted and checked, unknown ones refused, every problem said at once with the params the method
takes, and ``caller`` is never a param.

Mutation check (done): `params_model` without ``extra="forbid"`` turns test_unknown_and_wrong_params_are_refused
red (``colour`` accepted); building fields with ``Any`` instead of the hints turns the conversion check red.
"""

from __future__ import annotations

from typing import Any

import pytest

from hologram.kernel.admin import _checked, params_model
from hologram.rpc import RpcError


async def tail(name: str, lines: int = 200, caller: str | None = None) -> dict[str, Any]:
    return {"name": name, "lines": lines, "caller": caller}


def test_typed_params_are_converted_and_defaults_filled() -> None:
    model = params_model("kernel.plugins", "log", tail)
    assert set(model.model_fields) == {"name", "lines"}
    assert _checked("kernel.plugins", "log", model, {"name": "notes", "lines": "50"}) == {"name": "notes", "lines": 50}
    assert _checked("kernel.plugins", "log", model, {"name": "notes"}) == {"name": "notes", "lines": 200}
    assert model.model_json_schema()["required"] == ["name"]


def test_unknown_and_wrong_params_are_refused() -> None:
    model = params_model("kernel.plugins", "log", tail)
    with pytest.raises(RpcError) as caught:
        _checked("kernel.plugins", "log", model, {"lines": "many", "colour": "red"})
    message = str(caught.value)
    assert "name: Field required" in message and "lines: Input should be a valid integer" in message, message
    assert "colour: Extra inputs are not permitted" in message and message.endswith("its parameters: name, lines")
    with pytest.raises(RpcError, match="unexpected parameter 'caller'"):
        _checked("kernel.plugins", "log", model, {"name": "x", "caller": "web"})
    with pytest.raises(RpcError, match="params must be an object"):
        _checked("kernel.plugins", "log", model, [1])

"""The SDK refuses a tool's arguments that its handler's annotations do not accept (`hologram.sdk._jsontypes`),
as JSON Schema counts types: ``3.0`` is an integer, ``True`` is not, ``float`` takes integers, unions and
``Optional`` take each member, and an annotation the SDK does not understand claims nothing.

Mutation check (done): `argument_problem` returning None turns this file and
tests/launcher/test_sdk.py::test_tool_call_and_large_result_through_the_arena red (the latter over a real
process: ``echo(text=5)`` answered ``tooly: 5``)."""

from __future__ import annotations

from typing import Any, Literal

import pytest

from hologram.sdk._jsontypes import argument_problem


class Custom:
    pass


def tool(
    text: str,
    count: int = 1,
    ratio: float = 0.5,
    flag: bool = False,
    tags: list[str] | None = None,
    options: dict[str, Any] | None = None,
    mode: Literal["a", "b"] = "a",
    anything: Any = None,
    custom: Custom | None = None,
    unannotated=None,  # type: ignore[no-untyped-def]
) -> str:
    return text


@pytest.mark.parametrize(
    "arguments",
    [
        {"text": "x"},
        {"text": "x", "count": 3, "ratio": 2, "flag": True},
        {"text": "x", "count": 3.0},  # an integer, as JSON Schema counts it
        {"text": "x", "tags": ["a"], "options": {"k": 1}, "mode": "b"},
        {"text": "x", "tags": None, "options": None},
        {"text": "x", "anything": [1], "custom": {"k": 1}, "unannotated": 5},
    ],
)
def test_arguments_the_annotations_accept(arguments: dict[str, Any]) -> None:
    assert argument_problem(tool, arguments) is None


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({"text": 5}, "'text' must be string, not integer"),
        ({"text": "x", "count": 2.5}, "'count' must be integer, not number"),
        ({"text": "x", "count": True}, "'count' must be integer, not boolean"),
        ({"text": "x", "ratio": "0.5"}, "'ratio' must be integer or number, not string"),
        ({"text": "x", "tags": "a"}, "'tags' must be array or null, not string"),
        ({"text": "x", "options": []}, "'options' must be null or object, not array"),
        ({"text": "x", "mode": 1}, "'mode' must be string, not integer"),
    ],
)
def test_arguments_they_refuse(arguments: dict[str, Any], problem: str) -> None:
    assert argument_problem(tool, arguments) == problem

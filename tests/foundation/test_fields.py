"""`hologram._fields` and `hologram._model`: the validation that replaced pydantic for the settings, the
provider settings, the lock and the manifest keeps pydantic's behaviour where users met it.

The expected values and messages below are what pydantic 2 gave for the same inputs (measured with the
pydantic models these replaced), so a settings file, a lock or a manifest that loaded before loads the same,
and one that failed fails with the same words: lax coercions (``"16"`` → 16, ``4.0`` → 4, ``"yes"`` → true, a
list → a tuple), strict types, bounds, every problem at once in field order with unknown keys last, and
checks across fields only once the fields are valid.

Mutation checks (done): `_scalars.lax_int` without its whole-float-string fallback turns test_lax_coercions red
(``"3.0"``);
`_constrained` reporting the converted value as ``input`` turns test_a_bound_reports_the_input_as_given red;
`_matches` without its end-of-text test turns test_constraints red (``"ab\\n"`` passes the pattern);
`SecretStr.__repr__` returning the value turns test_a_secret_never_shows red; `dump` turning inf into None
on float fields too turns test_json_dump red.
"""

from __future__ import annotations

import datetime
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pytest

from hologram._fields import FieldError, meta
from hologram._model import Model
from hologram._secret import SecretStr
from hologram.llm import ProviderSettings


@dataclass(frozen=True, slots=True, kw_only=True)
class Lax(Model):
    i: int = 0
    f: float = 0.0
    b: bool = False
    s: str = ""
    t: tuple[str, ...] = ()
    items: list[str] = field(default_factory=list)
    d: dict[str, int] = field(default_factory=dict)
    lit: Literal["a", "b"] = "a"
    o: int | None = None
    p: Path | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Strict(Lax):
    _strict = True


@dataclass(frozen=True, slots=True, kw_only=True)
class Bounded(Model):
    count: int = field(default=1, metadata=meta(ge=1, le=10))
    share: float = field(default=0.5, metadata=meta(gt=0, lt=1))
    name: str = field(default="x", metadata=meta(min_length=1, max_length=3, pattern=r"^[a-z]+$"))
    argv: list[str] | None = field(default=None, metadata=meta(min_length=1))
    window: int | None = field(default=None, metadata=meta(gt=0))


@dataclass(frozen=True, slots=True, kw_only=True)
class Leaf(Model):
    n: int
    tag: str = "x"


@dataclass(frozen=True, slots=True, kw_only=True)
class Tree(Model):
    leaf: Leaf = field(default_factory=lambda: Leaf(n=0))
    leaves: list[Leaf] = field(default_factory=list)
    named: dict[str, Leaf] = field(default_factory=dict)
    low: int = 0
    high: int = 10

    def _check_model(self) -> None:
        if self.low > self.high:
            raise ValueError("low is above high")


def problems(cls: type[Model], data: dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(FieldError) as caught:
        cls.model_validate(data)
    return [(".".join(map(str, e.loc)), e.msg) for e in caught.value.errors]


@pytest.mark.parametrize(
    ("key", "given", "expected"),
    [
        ("i", "12", 12),
        ("i", " 3 ", 3),
        ("i", "1_000", 1000),
        ("i", "3.0", 3),
        ("i", 4.0, 4),
        ("i", True, 1),
        ("f", 1, 1.0),
        ("f", "2.5", 2.5),
        ("f", " 3 ", 3.0),
        ("f", "1e3", 1000.0),
        ("b", "yes", True),
        ("b", "Off", False),
        ("b", "t", True),
        ("b", 0, False),
        ("b", 1.0, True),
        ("t", ["a", "b"], ("a", "b")),
        ("items", ("a",), ["a"]),
        ("o", "7", 7),
        ("p", "/tmp/x", Path("/tmp/x")),
    ],
)
def test_lax_coercions(key: str, given: object, expected: object) -> None:
    value = getattr(Lax.model_validate({key: given}), key)
    assert value == expected and type(value) is type(expected)


@pytest.mark.parametrize(
    ("key", "given", "message"),
    [
        ("i", 4.5, "Input should be a valid integer, got a number with a fractional part"),
        ("i", "abc", "Input should be a valid integer, unable to parse string as an integer"),
        ("i", "3.5", "Input should be a valid integer, unable to parse string as an integer"),
        ("i", None, "Input should be a valid integer"),
        ("i", [1], "Input should be a valid integer"),
        ("i", math.inf, "Input should be a finite number"),
        ("f", "abc", "Input should be a valid number, unable to parse string as a number"),
        ("f", None, "Input should be a valid number"),
        ("b", 2, "Input should be a valid boolean, unable to interpret input"),
        ("b", "maybe", "Input should be a valid boolean, unable to interpret input"),
        ("b", " 1 ", "Input should be a valid boolean, unable to interpret input"),
        ("b", 1.5, "Input should be a valid boolean"),
        ("b", None, "Input should be a valid boolean"),
        ("s", 1, "Input should be a valid string"),
        ("s", datetime.date(2020, 1, 1), "Input should be a valid string"),
        ("t", "ls", "Input should be a valid tuple"),
        ("items", "ls", "Input should be a valid list"),
        ("d", [], "Input should be a valid dictionary"),
        ("lit", "c", "Input should be 'a' or 'b'"),
        ("p", 3, "Input is not a valid path for <class 'pathlib.Path'>"),
    ],
)
def test_lax_refusals(key: str, given: object, message: str) -> None:
    assert problems(Lax, {key: given}) == [(key, message)]


@pytest.mark.parametrize(
    ("key", "given", "message"),
    [
        ("i", True, "Input should be a valid integer"),
        ("i", "1", "Input should be a valid integer"),
        ("i", 1.0, "Input should be a valid integer"),
        ("f", "1.5", "Input should be a valid number"),
        ("b", 1, "Input should be a valid boolean"),
        ("b", "true", "Input should be a valid boolean"),
        ("t", ["a"], "Input should be a valid tuple"),
        ("items", ("a",), "Input should be a valid list"),
        ("p", "/tmp", "Input should be an instance of Path"),
    ],
)
def test_strict_refusals(key: str, given: object, message: str) -> None:
    assert problems(Strict, {key: given}) == [(key, message)]


def test_strict_takes_an_int_as_a_float() -> None:
    value = Strict.model_validate({"f": 30}).f
    assert value == 30.0 and type(value) is float


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"count": 0}, "Input should be greater than or equal to 1"),
        ({"count": 11}, "Input should be less than or equal to 10"),
        ({"share": 0}, "Input should be greater than 0"),
        ({"share": math.nan}, "Input should be less than 1"),
        ({"share": 1}, "Input should be less than 1"),
        ({"name": ""}, "String should have at least 1 character"),
        ({"name": "abcd"}, "String should have at most 3 characters"),
        ({"name": "AB"}, "String should match pattern '^[a-z]+$'"),
        ({"name": "ab\n"}, "String should match pattern '^[a-z]+$'"),
        ({"argv": []}, "List should have at least 1 item after validation, not 0"),
        ({"window": 0}, "Input should be greater than 0"),
    ],
)
def test_constraints(data: dict[str, Any], message: str) -> None:
    ((_, said),) = problems(Bounded, data)
    assert said == message


def test_constraints_skip_none_and_pass_good_values() -> None:
    ok = Bounded.model_validate({"count": "10", "share": 0.99, "name": "abc", "argv": ["x"], "window": None})
    assert (ok.count, ok.share, ok.name, ok.argv, ok.window) == (10, 0.99, "abc", ["x"], None)


def test_a_bound_reports_the_input_as_given() -> None:
    with pytest.raises(FieldError) as caught:
        Bounded.model_validate({"share": 0})
    assert caught.value.input == 0 and type(caught.value.input) is int  # not the converted 0.0


def test_every_problem_in_field_order_unknown_keys_last() -> None:
    data = {"zeta": 1, "t": 5, "i": "x", "alpha": 2, "lit": "z"}
    assert problems(Lax, data) == [
        ("i", "Input should be a valid integer, unable to parse string as an integer"),
        ("t", "Input should be a valid tuple"),
        ("lit", "Input should be 'a' or 'b'"),
        ("zeta", "Extra inputs are not permitted"),
        ("alpha", "Extra inputs are not permitted"),
    ]


def test_nested_models_are_located_and_typed() -> None:
    data = {"leaf": 3, "leaves": [{"n": 1}, {"tag": 2}], "named": {"a": {"n": "x"}, "b": []}}
    assert problems(Tree, data) == [
        ("leaf", "Input should be a valid dictionary or instance of Leaf"),
        ("leaves.1.n", "Field required"),
        ("leaves.1.tag", "Input should be a valid string"),
        ("named.a.n", "Input should be a valid integer, unable to parse string as an integer"),
        ("named.b", "Input should be a valid dictionary or instance of Leaf"),
    ]
    tree = Tree.model_validate({"leaves": [{"n": "2"}], "named": {"a": Leaf(n=4)}})
    assert tree.leaves == [Leaf(n=2)] and tree.named["a"] == Leaf(n=4) and tree.leaf == Leaf(n=0)


def test_the_check_across_fields_runs_once_the_fields_are_valid() -> None:
    assert problems(Tree, {"low": 5, "high": 1}) == [("", "Value error, low is above high")]
    assert problems(Tree, {"low": 5, "high": "x"}) == [
        ("high", "Input should be a valid integer, unable to parse string as an integer")
    ]
    with pytest.raises(FieldError, match="low is above high"):
        Tree(low=5, high=1)


def test_the_constructor_and_model_copy_validate_and_convert() -> None:
    made = Lax(i="5", t=["a"], f=2)  # type: ignore[arg-type]
    assert (made.i, made.t, made.f) == (5, ("a",), 2.0) and type(made.f) is float
    with pytest.raises(FieldError, match="Input should be a valid integer"):
        Lax(i="five")  # type: ignore[arg-type]
    assert made.model_copy(update={"i": "6"}).i == 6
    with pytest.raises(FieldError, match="Input should be 'a' or 'b'"):
        made.model_copy(update={"lit": "c"})
    with pytest.raises(TypeError):
        Lax(colour=1)  # type: ignore[call-arg]


def test_model_validate_refuses_what_is_not_a_table() -> None:
    with pytest.raises(FieldError, match="Input should be a valid dictionary or instance of Lax"):
        Lax.model_validate([1])
    same = Lax()
    assert Lax.model_validate(same) is same


def test_a_secret_never_shows() -> None:
    key = "sk-topsecret-0123"
    p = ProviderSettings(name="p", base_url="http://h/", model="m", api_key=key)  # type: ignore[arg-type]
    assert isinstance(p.api_key, SecretStr) and p.resolve_api_key() == key and p.base_url == "http://h"
    dumped = p.model_dump(mode="json")
    for text in (repr(p), str(p), f"{p}", f"{p.api_key}", json.dumps(dumped), repr(p.model_dump())):
        assert key not in text, text
    assert dumped["api_key"] == "**********" and repr(SecretStr("")) == "SecretStr('')"
    with pytest.raises(FieldError) as caught:
        ProviderSettings(name="p", base_url="ftp://h", model="m", api_key=key, api_key_env="K")  # type: ignore[arg-type]
    assert key not in str(caught.value) and key not in repr(caught.value)
    assert SecretStr(key) == SecretStr(key) and SecretStr(key) != key


def test_json_dump() -> None:
    @dataclass(frozen=True, slots=True, kw_only=True)
    class Dumped(Model):
        t: tuple[str, ...] = ("a",)
        f: float = math.inf
        p: Path = Path("/x")
        any: dict[str, Any] = field(default_factory=dict)
        hidden: str = field(default="h", metadata=meta(exclude=True))
        none: str | None = None

    when = datetime.datetime(1979, 5, 27, 7, 32, tzinfo=datetime.timezone.utc)
    d = Dumped(any={"when": when, "day": when.date(), "inf": math.inf, "list": [math.nan, (1, 2)]})
    assert d.model_dump(mode="json") == {
        "t": ["a"],
        "f": math.inf,  # a float field keeps it (pydantic did): manifest hashes depend on it
        "p": "/x",
        "any": {"when": "1979-05-27T07:32:00Z", "day": "1979-05-27", "inf": None, "list": [None, [1, 2]]},
        "none": None,
    }
    python = d.model_dump(exclude_none=True, exclude_defaults=True)
    assert set(python) == {"any"} and python["any"]["when"] is when and python["any"]["list"][1] == (1, 2)
    assert Dumped().model_dump(exclude_defaults=True) == {}

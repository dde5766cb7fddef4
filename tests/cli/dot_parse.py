"""A strict reader of the DOT subset `hologram memory graph --dot` writes, lexing quoted strings the way
Graphviz's own scanner does (lib/cgraph/scan.l: ``\\"`` is a quote, ``\\\\`` stays a pair, ``\\`` + newline
continues the line) and reading ``label`` as an escString (``\\n`` a line break, ``\\\\`` one backslash).
Graphviz itself is not on every machine; this is what a test can always run. Anything outside the subset is
an AssertionError naming it, so a broken quote cannot pass as a strange label."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_ID = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|-?(\.[0-9]+|[0-9]+(\.[0-9]*)?)")


@dataclass
class DotGraph:
    labels: dict[str, str] = field(default_factory=dict)  # node id -> its label, unescaped
    edges: list[tuple[str, str, str]] = field(default_factory=list)  # (tail, head, label)


def _tokens(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch.isspace():
            i += 1
        elif text.startswith("->", i):
            out.append(("op", "->"))
            i += 2
        elif ch in "{}[];,=":
            out.append(("op", ch))
            i += 1
        elif ch == '"':
            i += 1
            raw = []
            while True:
                if i >= len(text):
                    raise AssertionError("an unterminated quoted string")
                c = text[i]
                if c == "\\" and i + 1 < len(text) and text[i + 1] == '"':
                    raw.append('"')
                    i += 2
                elif c == "\\" and i + 1 < len(text) and text[i + 1] == "\\":
                    raw.append("\\\\")
                    i += 2
                elif c == "\\" and i + 1 < len(text) and text[i + 1] == "\n":
                    i += 2
                elif c == '"':
                    i += 1
                    break
                else:
                    raw.append(c)
                    i += 1
            out.append(("str", "".join(raw)))
        else:
            m = _ID.match(text, i)
            if not m:
                raise AssertionError(f"not DOT at {text[i : i + 20]!r}")
            out.append(("id", m.group(0)))
            i = m.end()
    return out


def _esc_string(raw: str) -> str:
    return re.sub(r"\\(.)", lambda m: "\n" if m.group(1) in "nlr" else m.group(1), raw)


def parse_dot(text: str) -> DotGraph:
    tokens = _tokens(text)
    pos = 0

    def take(kind: str | None = None, value: str | None = None) -> str:
        nonlocal pos
        if pos >= len(tokens):
            raise AssertionError("the graph ends early")
        k, v = tokens[pos]
        if (kind and k != kind) or (value and v != value):
            raise AssertionError(f"expected {value or kind}, found {v!r} (token {pos})")
        pos += 1
        return v

    def attrs() -> dict[str, str]:
        out: dict[str, str] = {}
        if pos < len(tokens) and tokens[pos] == ("op", "["):
            take("op", "[")
            while tokens[pos] != ("op", "]"):
                name = take("id")
                take("op", "=")
                k, v = tokens[pos]
                if k not in ("id", "str"):
                    raise AssertionError(f"attribute {name} has no value")
                out[name] = v
                take()
                if tokens[pos] == ("op", ","):
                    take("op", ",")
            take("op", "]")
        return out

    take("id", "digraph")
    if tokens[pos][0] in ("id", "str"):
        take()
    take("op", "{")
    graph = DotGraph()
    while tokens[pos] != ("op", "}"):
        first = take("id")
        if first in ("graph", "node", "edge"):
            attrs()
        elif tokens[pos] == ("op", "->"):
            take("op", "->")
            head = take("id")
            label = attrs().get("label", "")
            for end in (first, head):
                if end not in graph.labels:
                    raise AssertionError(f"edge {first} -> {head} names an undeclared node {end}")
            graph.edges.append((first, head, _esc_string(label)))
        else:
            graph.labels[first] = _esc_string(attrs().get("label", first))
        take("op", ";")
    take("op", "}")
    if pos != len(tokens):
        raise AssertionError("text after the graph's closing brace")
    return graph

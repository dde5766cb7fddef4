"""Key names a model sends (``Enter``, ``Ctrl-C``, ``Up``) as the bytes a terminal's keyboard would send.

The cursor keys have two encodings: ``ESC [ A`` normally, ``ESC O A`` once the program switched the terminal
to application cursor mode (DECCKM, ``ESC [ ? 1 h`` — less, vim and top do); `encode` takes the mode from the
screen, as a real terminal would.
"""

from __future__ import annotations

ESC = "\x1b"

PLAIN = {
    "enter": "\r",
    "return": "\r",
    "tab": "\t",
    "shift-tab": f"{ESC}[Z",
    "esc": ESC,
    "escape": ESC,
    "backspace": "\x7f",
    "delete": f"{ESC}[3~",
    "insert": f"{ESC}[2~",
    "pageup": f"{ESC}[5~",
    "pagedown": f"{ESC}[6~",
    "space": " ",
    "f1": f"{ESC}OP",
    "f2": f"{ESC}OQ",
    "f3": f"{ESC}OR",
    "f4": f"{ESC}OS",
    "f5": f"{ESC}[15~",
    "f6": f"{ESC}[17~",
    "f7": f"{ESC}[18~",
    "f8": f"{ESC}[19~",
    "f9": f"{ESC}[20~",
    "f10": f"{ESC}[21~",
    "f11": f"{ESC}[23~",
    "f12": f"{ESC}[24~",
}
CURSOR = {"up": "A", "down": "B", "right": "C", "left": "D", "home": "H", "end": "F"}
NAMES = (
    "Enter, Tab, Shift-Tab, Esc, Backspace, Delete, Insert, Up, Down, Left, Right, Home, End, PageUp, PageDown, "
    "Space, F1-F12, Ctrl-A … Ctrl-Z, Ctrl-[, Ctrl-\\, Ctrl-], Ctrl-^, Ctrl-_"
)


class UnknownKey(ValueError):
    """A key name nobody knows; the message lists the known ones."""


def encode(name: str, *, application_cursor: bool = False) -> str:
    """The characters for the key ``name`` (case and ``Ctrl+x``/``C-x`` spellings accepted)."""
    key = name.strip().lower().replace("_", "-").replace(" ", "")
    for prefix in ("ctrl+", "control-", "control+", "c-", "^"):
        if key.startswith(prefix) and len(key) > len(prefix):
            key = "ctrl-" + key[len(prefix) :]
    if key.startswith("ctrl-") and len(key) == 6:
        char = key[5].upper()
        if "A" <= char <= "Z" or char in "[\\]^_@":
            return chr(ord(char) & 0x1F)
    if key in PLAIN:
        return PLAIN[key]
    if key in CURSOR:
        return f"{ESC}{'O' if application_cursor else '['}{CURSOR[key]}"
    raise UnknownKey(f"unknown key {name!r}; keys: {NAMES}")

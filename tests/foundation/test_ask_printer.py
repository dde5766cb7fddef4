"""How `hologram ask` lays out a turn on the terminal: a tool's live output that ends without a newline does
not run into what comes next (seen using `hologram ask` as a newcomer: `cat` of a file without a final newline
was followed on the same line by the next step's reasoning).

And a call that failed shows one short line of why under its ``[tool …]`` line (issue 36's reader saw the
call but not its error text).

Mutation check (done): `Printer._end_output` doing nothing turns the first two tests red; `tool_failed` writing
nothing turns the third red.
"""

from __future__ import annotations

import io

from hologram.cli.ask_cmd import Printer


def test_reasoning_after_unterminated_output_starts_a_new_line() -> None:
    out, err = io.StringIO(), io.StringIO()
    printer = Printer(out, err, reasoning=True)
    printer.tool_call("shell_run", {"command": "cat notes/hello.txt"})
    printer.tool_output("hi from files")
    printer.delta("reasoning", "report")
    printer.tool_call("shell_run", {"command": "ls"})
    printer.tool_output("line\n")  # ends its own line: nothing added
    printer.tool_call("files_read", {"path": "a"})
    assert err.getvalue().splitlines() == [
        '[tool shell_run {"command": "cat notes/hello.txt"}]',
        "hi from files",
        "report",
        '[tool shell_run {"command": "ls"}]',
        "line",
        '[tool files_read {"path": "a"}]',
    ]


def test_the_answer_after_unterminated_output_starts_a_new_line() -> None:
    out, err = io.StringIO(), io.StringIO()
    printer = Printer(out, err, reasoning=False)
    printer.tool_output("partial")
    printer.delta("content", "The file says hi.")
    printer.finish("The file says hi.")
    assert err.getvalue() == "partial\n"
    assert out.getvalue() == "The file says hi.\n"


def test_a_failed_call_shows_one_short_line_of_why() -> None:
    out, err = io.StringIO(), io.StringIO()
    printer = Printer(out, err, reasoning=False)
    printer.tool_call("tally_add", {"name": "c", "amount": 1})
    printer.tool_failed("tally_add", "error", "error: cannot create counter 'c':\nthe limit is reached")
    printer.tool_failed("shell_run", "denied", "denied by guard: " + "x" * 300)
    lines = err.getvalue().splitlines()
    assert lines[:2] == [
        '[tool tally_add {"name": "c", "amount": 1}]',
        "[tool tally_add error: cannot create counter 'c': the limit is reached]",
    ]
    assert lines[2].startswith("[tool shell_run denied: denied by guard: xxx") and lines[2].endswith("…]")
    assert len(lines[2]) == len("[tool shell_run denied: ]") + 200
    assert out.getvalue() == ""


def test_a_result_with_an_image_says_what_came_and_where_to_see_it() -> None:
    out, err = io.StringIO(), io.StringIO()
    printer = Printer(out, err, reasoning=False)
    printer.tool_call("browser_screenshot", {})
    printer.tool_images(
        "browser_screenshot", [{"id": "ab" * 32, "mime": "image/png", "bytes": 123456, "width": 800, "height": 600}]
    )
    printer.tool_images("snap", [])
    assert err.getvalue().splitlines() == [
        "[tool browser_screenshot {}]",
        "[tool browser_screenshot image: image/png 800x600, 123,456 bytes — the web UI shows it]",
    ]
    assert out.getvalue() == ""

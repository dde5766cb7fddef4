"""Running a command for a tool call, shared by `shell` and `code`: the process guardian (every process a
call starts dies with the call), limits, live output, and a readable result. Approval is not here: the
kernel decides before either plugin receives a call (hologram/agent/approvals.py)."""

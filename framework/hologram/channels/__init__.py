"""Channels that are programs of their own rather than plugins: what an outside client spawns and talks to
(an editor's ACP agent over stdio). Each is a thin adapter over the turn API, written only against the public
modules a third party has — `hologram.clients`, `hologram.api`, `hologram.sdk` — and keeps no turn state of
its own beyond its connection; what it needs that the turn API lacks is added to the turn API for every
client. tests/guard/test_channel_imports.py fails if one imports a private module of the kernel.
"""

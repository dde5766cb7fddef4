from peer import Peer


class OpenClaw(Peer):
    name = "OpenClaw"
    version = "2026.9.6"

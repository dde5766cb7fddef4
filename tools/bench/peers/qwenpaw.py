from peer import Peer


class QwenPaw(Peer):
    name = "QwenPaw"
    version = "2.2.2"

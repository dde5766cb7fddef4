"""The bottom layer: small utilities every other package may import (JSON, the heap, the event loop,
file mappings, user-facing errors, the protocol's names, defaults); nothing here imports a package above."""

"""Cold: cold context (L2) — where events go when L1 is over budget, how they are found and how they come back.

Why a group: L2 is one durable store with one life cycle. An event's record and its blocks (``blocks``) are
written to SQLite (``store``: ``ColdStore``, WAL, fsynced) and searched through in-memory structures rebuilt
from it (``coldindex``); ``overflow`` decides when a request must move events out, and ``recall`` moves them
back to L1 (copy, then delete) for the ``coldcontext_query`` tool.
"""

"""Index: one search index per session over every event it ever had, L1 and L2 alike, in log order.

Why a group: the request's history is one ranking over a session's whole log, and this is the structure it
ranks in — ``session_index`` (BM25 postings per passage and dense matrices), its sealed
parts on disk (``index_segment``, memory-mapped while a request reads them) and event ids as 64-bit hashes
in sorted arrays (``idhash``). How the index is *ranked and cut to a budget* is the ``rank`` group's.
"""

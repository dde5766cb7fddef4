"""Rank: which of a session's events one request keeps — the query, the scores, the cut to a budget.

Why a group: relevance is one pipeline with one contract (DESIGN.md "Memory": history scored, not truncated).
The query is understood without an LLM call (``query``, measured against the session's own vocabulary by
``expand``); events are scored by dense + BM25 fusion smoothed over neighbouring turns (``score``, over the
scoring view of an event in ``events``), with signals of their own where one was measured to help
(``says_nothing``: a turn that states nothing competes with less of its score); and a budget keeps the best of
them, by the rules of ``prune`` and, on arrays for the request's path, ``fit``.
"""

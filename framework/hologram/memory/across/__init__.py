"""Across: memory across sessions and across time — what the person told, in another session or days ago.

Why a group: these answer one question, what the person said that still holds (issue 39 items 2 and 3). Every
input of every session with its session, time and speaker (``store``: ``AcrossStore``, ``across.db``), filled
once from the session log for older data (``across_backfill``); the people the person names in more than one
way (``aliases``); a later statement that corrects an earlier one (``corrections``); and the date on messages
when a request's history spans days (``dated``).
"""

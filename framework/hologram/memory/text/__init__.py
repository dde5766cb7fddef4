"""Text: the words of one text, in Chinese and English alike — no store, no model, no session.

Why a group: every other part of memory reads text through these, and none of them needs to know how. Token
estimates for budgets (``tokens``), lexical terms (``tokenizer`` over jieba's segmentation in ``segment``) and
their counts and IDF (``tfidf``), how much of one text is worked on (``bounds``), the sentence windows an event
is scored by (``passages``), time cues, calendar dates and months in a request (``timecues``, ``datecues``,
``monthcues``), whether an input tells or asks (``utterance``) and why a search hit matched (``search_match``).
They import nothing of memory outside this group, so the group can be read and tested on its own.
"""

"""Token estimates for budgeting without a provider tokenizer.

Pruning needs a token count for every event on entry, long before we know which provider (and therefore
which tokenizer) will see it, so we estimate. For alphabetic scripts the usual ~4 characters per token holds
well for BPE vocabularies (and is what the LoCoMo measurements in issue 5 use). CJK text is different: BPE
vocabularies spend roughly one token per Han/kana/hangul character (often more for rare ones), so counting
those characters at chars/4 would underestimate Chinese history by ~4x and overflow the window. We count
one token per CJK character and chars/4 for everything else.
"""

from __future__ import annotations

import math
import re

__all__ = ["CJK_RE", "estimate_tokens", "is_cjk_char"]

#: Han (incl. extension A and compatibility ideographs), CJK punctuation, kana, hangul, full-width forms.
CJK_RE = re.compile("[\u3000-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]")


def is_cjk_char(ch: str) -> bool:
    """True for one character that BPE tokenizers typically spend about a whole token on."""
    return CJK_RE.match(ch) is not None


def estimate_tokens(text: str) -> int:
    """Estimate the tokens `text` costs: 1 per CJK character plus ceil(other characters / 4).

    Never below 1 for non-empty text, so every event has a cost and the budget arithmetic cannot be gamed
    by empty-looking events; 0 for the empty string.
    """
    if not text:
        return 0
    cjk = len(CJK_RE.findall(text))
    other = len(text) - cjk
    return max(1, cjk + math.ceil(other / 4))

"""What kind of utterance a person's input is: a question or request to the agent, or something they tell about
themselves — the difference between "What is my car's plate?" and "My car's plate is 沪B62817".

Two users of it: memory across sessions (memory/across/store.py) recalls what the person *told*, so a request made in
another session ("Can you explain heat pumps?") is not a candidate there — among 700 stored inputs of 100
sessions, chit-chat requests were most of the near misses that crowded out the facts; and the L3 extractor
must not store a question as a fact (issue 39: ``user | 车牌号 | 多少`` came from "我的车牌号是多少？").

Rules, not a model: an input is a *question* when it ends with a question mark (ASCII or full width), or —
Chinese — with a question particle (吗, 呢, 么) or contains a question word (什么, 多少, 哪, 几, 谁, 怎么, 为什么,
是否, 有没有); English: starts with an interrogative or auxiliary ("what", "how", "do", "can"...). It is a
*request* when it starts with an imperative the agent is asked to do ("write", "explain", "help me", "帮我",
"请"...). Something *told* is neither, with some content (three words, or four Han characters): no first person
is required — Chinese drops the pronoun ("备用钥匙放在绿萝下面"), and "the gate code is 5829" is the person's
fact all the same. A long input is judged sentence by sentence: one statement among its sentences is enough
(a fact said in passing before a question still counts).
"""

from __future__ import annotations

import re

__all__ = ["is_question", "is_request", "sentences", "speaks_of_self", "tells", "without_questions"]

_SENTENCE = re.compile(r"[^.!?。！？\n]+[.!?。！？]*")
_FIRST_PERSON = re.compile(r"(?i:\b(?:i|i'm|i’m|i've|i’ve|my|me|mine|myself)\b)|我")
_WORD = re.compile(r"[A-Za-z0-9]+(?:['’][A-Za-z]+)?")
_HAN = re.compile("[\u4e00-\u9fff]")
_EN_QUESTION_START = re.compile(
    r"^\s*(what|what's|whats|how|why|when|where|who|whom|whose|which|is|are|am|was|were|do|does|did|can|could|"
    r"would|will|shall|should|may|might|have|has|had|isn't|aren't|don't|doesn't|didn't|won't|any)\b",
    re.I,
)
_EN_REQUEST_START = re.compile(
    r"^\s*(please|pls|write|explain|tell|give|help|show|list|make|create|draft|suggest|recommend|summari[sz]e|"
    r"translate|convert|describe|find|remind|let's|lets|teach|compose|generate|plan|check|proofread|fix)\b",
    re.I,
)
_ZH_QUESTION = re.compile(
    "(吗|呢|么|嘛)[\\s。.]*$|什么|多少|哪|几[个点天号岁月年次]?|谁|怎么|怎样|为什么|为啥|是否|有没有|是不是"
)
_ZH_REQUEST_START = re.compile("^\\s*(请|帮我|帮忙|给我|教我|告诉我|推荐|写|解释|翻译|总结|讲|列出|提醒我|说说)")


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.findall(text) if s.strip()]


def is_question(sentence: str) -> bool:
    """Whether `sentence` asks something (module docstring)."""
    s = sentence.strip()
    if not s:
        return False
    if s.endswith(("?", "？")):
        return True
    if re.search("[\u4e00-\u9fff]", s):
        return bool(_ZH_QUESTION.search(s))
    return bool(_EN_QUESTION_START.match(s))


def is_request(sentence: str) -> bool:
    """Whether `sentence` asks the agent to do something (an imperative)."""
    return bool(_EN_REQUEST_START.match(sentence) or _ZH_REQUEST_START.match(sentence))


def tells(text: str) -> bool:
    """Whether `text` tells something: one of its sentences is a statement with some content, neither a
    question nor a request (module docstring)."""
    for s in sentences(text):
        if is_question(s) or is_request(s):
            continue
        if len(_WORD.findall(s)) >= 3 or len(_HAN.findall(s)) >= 4:
            return True
    return False


def without_questions(text: str) -> str:
    """`text` with its questions replaced by line breaks, everything else as it was: what the L3 extractor reads
    (issue 39: "我的车牌号是多少？" became the fact ``user | 车牌号 | 多少``)."""
    out: list[str] = []
    end = 0
    for m in _SENTENCE.finditer(text):
        out.append(text[end : m.start()])
        out.append("\n" if is_question(m.group()) else m.group())
        end = m.end()
    out.append(text[end:])
    return "".join(out)


def speaks_of_self(text: str) -> bool:
    """Whether `text` speaks of its speaker in the first person ("my car", "I", "我的"): memory's L3 then treats it
    as naming the speaker's entity (the rules store "my X" under the speaker: `user | 车牌号 | 沪B62817`)."""
    return bool(_FIRST_PERSON.search(text))

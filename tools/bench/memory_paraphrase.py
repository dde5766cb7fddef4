"""Chinese and English long-conversation sets: facts said in passing, some corrected later, asked in paraphrase.

Issue 39 item 4: LoCoMo is English and its questions mostly share words with their evidence; a user's diary
is neither. Each set here is one long conversation made by code (seeded, nothing downloaded): ~320 turns of
everyday chatter in which 18 facts are said in passing, inside longer messages (a licence plate, a pet's
name, an allergy, a transfer...); 6 of them are corrected later in the conversation ("the Denver move fell
through; they're sending me to Austin") — *the later value must win*: the correction's turn is the evidence,
and a request that carries only the stale statement scores 0 for that question. After the whole
conversation every fact is asked once in paraphrase: a question that shares few words with its fact ("Which
relative of mine is tying the knot, and at what venue?" for "my sister is getting married ... at a vineyard").

Run through the product's path (:func:`memory_stream._run_conversation`: every turn an input through
`SessionMemory` on disk with a short answer stored after it, then each question ``preview``-ed against the
state the conversation left), at the same history budgets as LoCoMo, beside two baselines over the same
events: *truncation* (the newest turns that fit) and *BM25* (textbook Okapi over words, Han text as
character bigrams — not our tokenizer — through the same ``prune()``, pinning and budget rules).

Metric: evidence in context (the share of a question's evidence turns in the request), and *stale* = the
corrected questions whose request carries the superseded statement and not the correction.
"""

from __future__ import annotations

import asyncio
import math
import random
import re
import statistics
import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from memory_stream import ANSWER, StreamTurn, _run_conversation, percentile

from hologram.memory.embed.embedder import Embedder
from hologram.memory.rank.events import MemoryEvent, Query, make_event
from hologram.memory.rank.prune import prune
from hologram.memory.text.tfidf import TermVector
from hologram.memory.text.tokens import estimate_tokens


@dataclass(frozen=True)
class Fact:
    """A fact said in passing (`said`), perhaps corrected later (`corrected`), asked in paraphrase (`asked`)."""

    said: str
    asked: str
    corrected: str = ""


ZH_FACTS = (
    Fact(
        "今天下班顺路去4S店把新车提了，车牌号是沪B62817，开回家的路上堵了快一个小时，累死了。",
        "我现在开的那辆挂的是什么牌照？",
        "之前那辆车变速箱有毛病，退掉了，换了一辆白色的，新牌照是沪A39C57。",
    ),
    Fact(
        "说起来我妹妹下个月要结婚了，婚礼定在杭州西湖边上的一家酒店，我还得准备份子钱。", "家里谁要办喜事？在哪儿办？"
    ),
    Fact("刚带我家柯基豆豆去打了疫苗，它在医院里吓得一直发抖。", "我养的那只宠物叫什么？"),
    Fact(
        "公司通知把我调到深圳分部，下周一开始就得过去上班了。",
        "单位要派我去哪座城市工作？",
        "深圳那边的调动取消了，最后改成去成都，月底动身。",
    ),
    Fact("上次看病医生说我对青霉素过敏，以后开药一定要提醒一下。", "哪种药我碰不得？"),
    Fact("我老婆的生日是三月十二号，得提前想想送什么礼物。", "我爱人哪天过生日？"),
    Fact(
        "家里的wifi密码我改成sunflower2024了，省得邻居蹭网。",
        "客人来我家要上网，该输什么口令？",
        "wifi密码又换了一次，现在是moonlight88。",
    ),
    Fact("最近报了个西班牙语班，每周二和周四晚上上课，作业还挺多。", "我每周哪几个晚上要去上课？"),
    Fact(
        "房东刚才发消息，说下个月起房租涨到六千五。",
        "如今我每个月得交多少租金？",
        "跟房东磨了半天，他松口了，房租只涨到六千二。",
    ),
    Fact("儿子现在读小学三年级，班主任姓王，人挺负责的。", "孩子的老师姓什么？"),
    Fact("献血的时候才知道我是AB型血。", "如果要输血，我该用哪一种？"),
    Fact(
        "出差的机票订好了，周五早上七点四十的东航MU5137。",
        "这趟出门我坐哪一班飞机？",
        "航班改签了，改成周六下午的MU5161。",
    ),
    Fact("我最喜欢的作家一直是余华，《活着》看了三遍。", "我偏爱哪位小说家？"),
    Fact("我们组接了个新项目，内部代号叫青鸟，下周开启动会。", "我们团队手上那个新活儿叫什么名字？"),
    Fact("体检报告出来了，胆固醇有点高，医生让我少吃肥肉。", "上回检查身体查出了什么毛病？"),
    Fact("我妈一直住在青岛，每年春节我都回去陪她。", "我母亲家在哪个城市？"),
    Fact("入职的时候分到的工号是HX-20931，打卡要用。", "我在公司的员工编号是多少？"),
    Fact(
        "车现在停在地下二层的C17号车位，别忘了。",
        "我的车子如今停在什么位置？",
        "物业把车位调整了，换到了负一层的A05。",
    ),
)

EN_FACTS = (
    Fact(
        "Stopped by the dealer on the way home and finally picked up the new car, plate reads KLM 4471, then sat "
        "in traffic for an hour in the rain.",
        "What registration is on the vehicle I drive these days?",
        "Returned that car, the gearbox was faulty; the replacement is white and its plate is KTX 9012.",
    ),
    Fact(
        "By the way my sister is getting married in June, the ceremony is at a vineyard near Napa, so I need a suit.",
        "Which relative of mine is tying the knot, and at what venue?",
    ),
    Fact(
        "Took our corgi Biscuit for his shots today, he shook the whole time at the clinic.", "What is my pet called?"
    ),
    Fact(
        "Work is relocating me to the Denver office, I start there on Monday.",
        "Which city is my employer transferring me to?",
        "The Denver move fell through; they're sending me to Austin instead, at the end of the month.",
    ),
    Fact(
        "The doctor said I'm allergic to penicillin, so I have to mention it at every pharmacy.",
        "Which drug must I never take?",
    ),
    Fact(
        "My wife's birthday is March 12th, I should plan something early this year.",
        "When does my spouse turn a year older?",
    ),
    Fact(
        "I changed the wifi password to sunflower2024 so the neighbours stop using it.",
        "What should guests type to get online at my place?",
        "Had to change the wifi password again, it's moonlight88 now.",
    ),
    Fact(
        "Signed up for Spanish lessons, Tuesday and Thursday evenings, lots of homework.",
        "On which nights of the week am I busy with a course?",
    ),
    Fact(
        "Landlord texted that the rent goes up to 2,400 next month.",
        "How much do I pay for my apartment each month now?",
        "Haggled with the landlord and he backed down, the rent will only be 2,250.",
    ),
    Fact("My son is in third grade now, his teacher is Mrs. Alvarez, she's great.", "Who instructs my boy at school?"),
    Fact(
        "Found out at the donation drive that I'm AB negative.",
        "If I ever needed a transfusion, what kind would suit me?",
    ),
    Fact(
        "Booked the work trip: Friday at 7:40 in the morning, UA 1532.",
        "Which plane am I catching for the journey?",
        "The airline rebooked me onto Saturday afternoon's UA 1618.",
    ),
    Fact(
        "Kazuo Ishiguro has always been my favourite novelist, I've read Klara three times.",
        "Which author do I love reading most?",
    ),
    Fact(
        "Our team got a new project, internally code-named Bluebird, kickoff next week.",
        "What do we call the initiative my group just took on?",
    ),
    Fact(
        "The checkup showed slightly high cholesterol, the doc told me to cut back on fried food.",
        "What did my last medical exam reveal?",
    ),
    Fact("Mom still lives in Portland, I fly out to see her every Thanksgiving.", "Where is my mother's home?"),
    Fact("HR gave me badge number HX-20931 on my first day, I need it to clock in.", "What's my employee ID?"),
    Fact(
        "The car is parked on level B2 in spot C17, don't forget.",
        "Where is my car kept in the garage at the moment?",
        "Building management reassigned the parking, it's spot A05 on B1 now.",
    ),
)

# Everyday chatter around the facts: topics and phrases recombined by a seeded generator, so the 300 turns are
# varied text (not one line repeated, which BM25 and the dense side would both see through).
ZH_CHATTER = (
    (
        "今天天气",
        ("又闷又热", "下了一整天雨", "阴沉沉的", "难得出了太阳", "风特别大"),
        ("出门忘带伞了", "衣服都晾不干", "心情也跟着一般", "适合在家躺着", "空气还行"),
    ),
    (
        "午饭",
        ("吃了楼下的兰州拉面", "点了份黄焖鸡", "跟同事去吃了火锅", "随便啃了个面包", "自己带了便当"),
        ("味道一般", "排队排了二十分钟", "吃得有点撑", "价格又涨了", "下次不去了"),
    ),
    (
        "周末",
        ("去爬了趟山", "在家追剧", "陪朋友逛街", "去图书馆待了一下午", "打扫了一遍屋子"),
        ("挺放松的", "腿到现在还酸", "钱包瘪了", "看完了两本书", "累但是开心"),
    ),
    (
        "最近工作",
        ("会议特别多", "一直在改方案", "老板催得很紧", "稍微轻松一点", "在写季度总结"),
        ("每天加班到九点", "脑子都转不动了", "希望月底能忙完", "总算能按时下班", "周报写得头疼"),
    ),
    (
        "晚上",
        ("看了部老电影", "做了个番茄炒蛋", "跑了五公里", "跟朋友打了会儿游戏", "早早就睡了"),
        ("感觉还不错", "有点失眠", "明天还得早起", "手机刷到很晚", "睡得很香"),
    ),
    (
        "地铁上",
        ("人挤人", "碰到一个老同学", "看了半本小说", "听了一期播客", "差点坐过站"),
        ("一路站到公司", "聊了好久", "挺有意思的", "讲的是历史", "下次得定个闹钟"),
    ),
    (
        "超市",
        ("水果打折", "买了一大袋零食", "排队结账排了好久", "鸡蛋又涨价了", "新开了一家店"),
        ("买了两箱苹果", "又超预算了", "自助收银坏了", "只好少买点", "离家挺近"),
    ),
    (
        "手机",
        ("电池不太行了", "屏幕摔裂了一个角", "更新完系统卡得很", "存储空间又满了", "换了个新壳"),
        ("考虑换一台", "凑合着用", "删了好多照片", "清理了一下缓存", "颜色挺好看"),
    ),
)
EN_CHATTER = (
    (
        "The weather today",
        (
            "was muggy all day",
            "turned to rain by noon",
            "stayed grey and cold",
            "was finally sunny",
            "got really windy",
        ),
        (
            "and I forgot my umbrella",
            "so the laundry never dried",
            "which killed my mood a bit",
            "perfect for staying in",
            "not too bad overall",
        ),
    ),
    (
        "For lunch I",
        (
            "had noodles downstairs",
            "grabbed a burrito",
            "went for hot pot with coworkers",
            "just ate a sandwich at my desk",
            "brought leftovers",
        ),
        (
            "and it was fine",
            "after a twenty minute line",
            "and ate way too much",
            "and prices went up again",
            "never again",
        ),
    ),
    (
        "This weekend I",
        (
            "went hiking",
            "binge-watched a show",
            "helped a friend move",
            "spent the afternoon at the library",
            "cleaned the whole flat",
        ),
        (
            "and it was relaxing",
            "and my legs still ache",
            "and spent too much",
            "and finished two books",
            "tired but happy",
        ),
    ),
    (
        "Work lately",
        (
            "is all meetings",
            "means endless revisions",
            "has my manager breathing down my neck",
            "is a bit calmer",
            "is quarterly report season",
        ),
        (
            "and I stay until nine",
            "and my brain is fried",
            "hopefully done by the end of the month",
            "so I leave on time",
            "ugh",
        ),
    ),
    (
        "Last night I",
        (
            "watched an old movie",
            "cooked pasta from scratch",
            "ran five kilometres",
            "played games with friends online",
            "went to bed early",
        ),
        (
            "which was nice",
            "and then couldn't sleep",
            "early start tomorrow though",
            "scrolled my phone way too late",
            "slept like a log",
        ),
    ),
    (
        "On the subway",
        (
            "it was packed",
            "I bumped into an old classmate",
            "I read half a novel",
            "I listened to a podcast",
            "I almost missed my stop",
        ),
        (
            "so I stood the whole way",
            "and we talked for ages",
            "pretty gripping",
            "about Roman history",
            "need an alarm next time",
        ),
    ),
    (
        "At the grocery store",
        (
            "fruit was on sale",
            "I bought a bag of snacks",
            "the checkout line was huge",
            "eggs went up again",
            "a new branch opened",
        ),
        (
            "so I got two boxes of apples",
            "over budget again",
            "self-checkout was broken",
            "bought less",
            "close to home",
        ),
    ),
    (
        "My phone",
        (
            "battery is dying fast",
            "screen cracked in a corner",
            "got slow after the update",
            "is out of storage again",
            "has a new case",
        ),
        ("thinking of replacing it", "making do for now", "deleted tons of photos", "cleared the cache", "nice colour"),
    ),
)


@dataclass
class ParaphraseSet:
    """One language's conversation and its questions (module docstring)."""

    name: str
    turns: list[StreamTurn]
    questions: list[tuple[str, set[str]]]
    stale: dict[str, str] = field(default_factory=dict)
    """Question → the dia id of the superseded statement (corrected facts only)."""


def _chatter(rng: random.Random, pool: Sequence[tuple[str, Sequence[str], Sequence[str]]], zh: bool) -> str:
    parts = []
    for _ in range(rng.randint(1, 3)):
        topic, what, after = rng.choice(pool)
        parts.append(
            f"{topic}{rng.choice(what)}，{rng.choice(after)}。"
            if zh
            else f"{topic} {rng.choice(what)}, {rng.choice(after)}."
        )
    return ("" if zh else " ").join(parts)


def build_set(
    name: str,
    facts: Sequence[Fact],
    pool: Sequence[tuple[str, Sequence[str], Sequence[str]]],
    *,
    zh: bool,
    turns: int = 320,
    seed: int = 39,
) -> ParaphraseSet:
    """The conversation: chatter, each fact said once in the first half (wrapped in chatter, "in passing"),
    each correction a hundred turns or more after its fact; the questions after the last turn."""
    rng = random.Random(seed)
    said_at = sorted(rng.sample(range(10, turns // 2), len(facts)))
    corrected_at = {}
    for i, fact in enumerate(facts):
        if fact.corrected:
            at = rng.randrange(said_at[i] + 100, turns - 20)
            while at in said_at or at in corrected_at.values():
                at += 1
            corrected_at[i] = at
    text_at: dict[int, str] = {}
    for i, fact in enumerate(facts):
        text_at[said_at[i]] = fact.said
        if i in corrected_at:
            text_at[corrected_at[i]] = fact.corrected
    start = 1_700_000_000.0
    out: list[StreamTurn] = []
    for t in range(turns):
        text = text_at.get(t)
        if text is not None:
            wrap = _chatter(rng, pool, zh)
            sep = "" if zh else " "
            text = f"{wrap}{sep}{text}" if rng.random() < 0.5 else f"{text}{sep}{wrap}"
        else:
            text = _chatter(rng, pool, zh)
        out.append(StreamTurn(f"T{t}", f"me: {text}", start + 600.0 * t))
    questions = []
    stale = {}
    for i, fact in enumerate(facts):
        where = corrected_at.get(i, said_at[i])
        questions.append((fact.asked, {f"T{where}"}))
        if i in corrected_at:
            stale[fact.asked] = f"T{said_at[i]}"
    return ParaphraseSet(name, out, questions, stale)


def sets() -> list[ParaphraseSet]:
    return [build_set("Chinese", ZH_FACTS, ZH_CHATTER, zh=True), build_set("English", EN_FACTS, EN_CHATTER, zh=False)]


class _BM25:
    """Textbook Okapi BM25 (k1 1.5, b 0.75) over lower-cased words, Han runs as character bigrams (the usual
    CJK analyser): the baseline, deliberately not our tokenizer or index."""

    def __init__(self, docs: Sequence[str]) -> None:
        self.tf = [Counter(self.tok(d)) for d in docs]
        self.len = [sum(c.values()) for c in self.tf]
        self.avg = sum(self.len) / max(1, len(self.len))
        df: Counter[str] = Counter()
        for c in self.tf:
            df.update(c.keys())
        self.idf = {t: math.log((len(docs) - f + 0.5) / (f + 0.5) + 1.0) for t, f in df.items()}

    @staticmethod
    def tok(text: str) -> list[str]:
        out: list[str] = []
        for word in re.findall(r"\w+", text.lower()):
            for run in re.split(r"([\u4e00-\u9fff]+)", word):
                if re.fullmatch(r"[\u4e00-\u9fff]+", run):
                    out.extend(run[i : i + 2] for i in range(max(1, len(run) - 1)))
                elif run:
                    out.append(run)
        return out

    def scores(self, query: str) -> np.ndarray:
        q = [t for t in set(self.tok(query)) if t in self.idf]
        out = np.zeros(len(self.tf))
        for i, (c, dl) in enumerate(zip(self.tf, self.len, strict=True)):
            norm = 1.5 * (0.25 + 0.75 * dl / self.avg)
            out[i] = sum(self.idf[t] * c[t] * 2.5 / (c[t] + norm) for t in q if t in c)
        return out


def _baselines(s: ParaphraseSet, budget: int, pinned: int) -> dict[str, list[float]]:
    """Truncation and BM25 over the same events as the stream (each input and its stored answer)."""
    events: list[MemoryEvent] = []
    for i, turn in enumerate(s.turns):
        events.append(make_event(turn.dia_id, 2.0 * i, turn.text, tokens=estimate_tokens(turn.text)))
        events.append(make_event(f"{turn.dia_id}/r", 2.0 * i + 1, ANSWER, tokens=estimate_tokens(ANSWER)))
    bm25 = _BM25([e.text for e in events])
    out: dict[str, list[float]] = {"truncation": [], "bm25": []}
    for text, evidence in s.questions:
        query = Query(text, TermVector.from_text(text), None)
        newest = np.arange(len(events), dtype=np.float64)
        scored = bm25.scores(text)
        for method, scores in (("truncation", newest), ("bm25", scored)):
            res = prune(events, query, budget, pinned_recent=pinned, scorer=lambda _e, _q, s=scores: s)
            kept = {e.id for e in res.kept}
            out[method].append(len(evidence & kept) / len(evidence))
    return out


def run(embedder: Embedder | None, budgets: Sequence[int], pinned: int) -> None:
    """The table: per set and budget, ours (the product's path) beside truncation and BM25."""
    print(
        "paraphrase sets: facts said in passing, 6 of 18 corrected later (the later must be in the request), "
        "asked in paraphrase after the conversation; evidence in context"
    )
    header = (
        f"{'set':>8} | {'turns':>5} | {'tokens':>6} | {'budget':>6} | {'truncation':>10} | {'BM25':>5} | "
        f"{'ours':>5} | {'ours, corrected':>15} | {'stale only':>10} | {'prepare p50':>11}"
    )
    print(header)
    print("-" * len(header))
    for s in sets():
        tokens = sum(estimate_tokens(t.text) + estimate_tokens(ANSWER) for t in s.turns)
        for budget in budgets:
            base = _baselines(s, budget, pinned)
            seen: list[set[str]] = []
            with tempfile.TemporaryDirectory() as tmp:
                scores, latencies, _, _ = asyncio.run(
                    _run_conversation(s.turns, s.questions, budget, embedder, Path(tmp), pinned, seen)
                )
            corrected = [sc for (q, _), sc in zip(s.questions, scores, strict=True) if q in s.stale]
            stale = sum(
                1
                for (q, ev), got in zip(s.questions, seen, strict=True)
                if q in s.stale and s.stale[q] in got and not ev & got
            )
            print(
                f"{s.name:>8} | {len(s.turns):>5} | {tokens:>6} | {budget:>6} | "
                f"{statistics.fmean(base['truncation']):>10.3f} | {statistics.fmean(base['bm25']):>5.3f} | "
                f"{statistics.fmean(scores):>5.3f} | {statistics.fmean(corrected):>15.3f} | "
                f"{stale:>4} of {len(corrected):<3} | {percentile(latencies, 50):>8.2f} ms"
            )

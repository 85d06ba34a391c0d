"""Which clauses are facts about the speaker: first person, not a question or a request,
and carrying some content beyond "I see" / "我知道了". General knowledge ("There are
branches in trees") has no first person and falls out by the same rule."""

from __future__ import annotations

import logging
import re
import threading

_EN_I = re.compile(r"(?<![/@.])\b(?:I|I'm|I've|I'll|I'd|[Mm]y|mine|myself)\b(?![/@]|\.\w)")
_EN_QUESTION = re.compile(
    r"^(?:who|what|when|where|why|how|which|whose|whom|is|are|am|was|were|do|does|did|can|"
    r"could|would|will|should|shall|may|might|have|has|had)\b(?!\s+(?:I|my)\s+\w+ing\b)",
    re.I,
)
_EN_REQUEST = re.compile(
    r"^(?:please|pls|can you|could you|would you|will you|tell me|show me|give me|help me|"
    r"let me|let's|lets|remind me|find me|send me|recommend|suggest|explain|write|make|"
    r"create|translate|summari[sz]e)\b",
    re.I,
)
_EN_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'-]*")
EN_STOP = frozenset(
    """i i'm i've i'll i'd me my mine myself you your yours we our us they them their it its
    it's this that these those he she him her his a an the and or but so if then than to of
    in on at by for with about from as into over up down out off just really very quite
    too also still even only maybe perhaps now then here there am is are was were be been
    being have has had do does did don't doesn't didn't not no yes can could will would
    shall should may might must won't can't cannot isn't aren't wasn't weren't haven't
    hasn't hadn't wouldn't shouldn't couldn't gonna wanna kind sort lot bit thing things
    stuff something anything everything nothing one some any all much many more most
    such own same other""".split()
)
# Words that carry no fact alone: "I see", "I'm fine", "I like it", "I think so".
EN_EMPTY = frozenset(
    """see know think guess agree understand mean suppose hope wonder bet believe feel
    fine good ok okay great well sure glad sorry thanks thank right yeah yep nope lol
    haha happy help helpful bye goodbye later interesting cool nice wow awesome true
    exactly totally absolutely definitely sounds sound got get like likes love loves want
    wants need needs prefer prefers enjoy enjoys hate hates name called go going back
    ready done busy tired assist assistant recommend suggest happen happened mind
    change changed""".split()
)
_ZH_I = re.compile(r"我(?!们)")
_ZH_QUESTION = re.compile(
    r"[?？]\s*$|[吗嘛么呢]\s*[。.!！]?\s*$|什么|怎么|为什么|为啥|哪里|哪儿|哪个|哪些|谁|"
    r"多少|几点|几个|是否|能不能|可不可以|要不要|有没有|是不是|会不会|行不行|好不好"
)
_ZH_REQUEST = re.compile(r"^(?:请|帮我|给我|告诉我|麻烦|能否|可以帮|帮忙|你能|你可以|您能)")
ZH_STOP = frozenset(
    """我 我的 你 您 他 她 它 的 了 是 也 都 就 很 还 在 吧 呢 啊 吗 哦 嗯 呀 啦 着 过 和 与 跟
    要 会 想 能 可以 一个 一下 这 那 这个 那个 有点 有些 非常 真 太 挺 比较 不 没 没有 又 再
    才 刚 已经 正在 叫 名字 喜欢 爱 讨厌 想要 需要 觉得 认为 感觉 知道 明白 了解 懂 同意
    看看 想想 没事 还行 好 好的 行 谢谢 感谢 对 是的 不错 一样 随便 当然 确实 真的 哈哈 帮助
    抱歉 对不起 高兴 开心 所以 但是 因为 而且 然后 如果 就是 其实 一直 挺好 有 去 做""".split()
)
_ZH_PUNCT = re.compile(r"^[\s\W_]+$")

_jieba_lock = threading.Lock()


def is_first_person(clause: str, zh: bool) -> bool:
    return (_ZH_I if zh else _EN_I).search(clause) is not None


def is_question_or_request(clause: str, zh: bool) -> bool:
    if zh:
        return bool(_ZH_QUESTION.search(clause) or _ZH_REQUEST.match(clause))
    stripped = clause.rstrip()
    return stripped.endswith("?") or bool(
        _EN_QUESTION.match(stripped) or _EN_REQUEST.match(stripped)
    )


def content_words(clause: str, zh: bool) -> list[str]:
    """Words that say something about the speaker, after pronouns, particles, fillers."""
    if zh:
        return [
            w for w in segment(clause) if w.strip() and w not in ZH_STOP and not _ZH_PUNCT.match(w)
        ]
    words = [w.lower() for w in _EN_WORD.findall(clause)]
    return [w for w in words if w not in EN_STOP and w not in EN_EMPTY]


def is_fact_clause(clause: str, zh: bool) -> bool:
    """First person, a statement, and with content: what the rules keep."""
    return (
        is_first_person(clause, zh)
        and not is_question_or_request(clause, zh)
        and bool(content_words(clause, zh))
    )


def segment(text: str) -> list[str]:
    """jieba words (dictionary ships in the package, so this works offline)."""
    import jieba

    with _jieba_lock:  # first call builds the prefix dict; keep that single-threaded
        if not jieba.dt.initialized:
            jieba.setLogLevel(logging.WARNING)
            jieba.initialize()
    return jieba.lcut(text)

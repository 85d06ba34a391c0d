"""Chinese entity mentions by rules (docs/architecture.md#entities).

Three passes over jieba's words (tagged once and cached in ``core.sameness``, the tagger
the writer already loads). Titles in 《》 are works. Relation words, whole jieba words
only (so 哥 inside 哥伦比亚 is none): with a name after them they name a person or a pet
("我妹妹小美" → 小美, relation 妹妹; "好友Jimmy"; "新邻居红红"; "我家的狗叫旺财"), and a
kin word alone is the relation itself ("妈妈" → ``rel:妈妈``). Then jieba's proper-noun
tags: nr person, ns place, nt organisation, nz other. Its dictionary tags many common
words nr or ns ("翠绿色", "马拉松", "台风"), so a person must also look like a name (a
surname first, a nickname, a transliteration), not end in an animal ("东北虎"), and not
stand before a product head ("奥特曼玩具" is a toy); a place must stand next to a word that
goes with places or end like one. A surname with a title ("王同学", "李大爷") and 小/老
with a surname ("小张") are people; a name before an organisation head ("华为公司") is
an organisation. Latin words inside Chinese text ("Bart在学校…") are capitalised names, typed by
the English lists.
"""

from __future__ import annotations

import re

from core.sameness import cjk_words
from models.rules import entity_words as w
from models.rules.entity_mention import EntityMention, Taken, entity_key, relation_key
from models.rules.filters import EN_STOP

_TITLE = re.compile(r"《([^《》\n]{1,50})》")
# A Latin title in ASCII quotes inside Chinese text: 电影"Minions: The Rise of Gru"
_QUOTED_LATIN = re.compile(r'"([A-Za-z][^"\n]{0,60})"')
_ALL_RELATIONS = {**w.ZH_SOCIAL, **w.ZH_KIN, **w.ZH_PETS}
_LONGEST = max(map(len, _ALL_RELATIONS))
_PIECES = frozenset(_ALL_RELATIONS) | {"叫", "名叫"}
_CALLED = re.compile(r"(?:名字)?叫做?|名叫")
_HAN = re.compile(r"^[\u3400-\u4dbf\u4e00-\u9fff]+$")
_LATIN_NAME = re.compile(r"[A-Z][A-Za-z'’-]*")
_CAMEL = re.compile(r"[a-z][A-Z][A-Za-z]*")  # iPhone, eBay
_GIVEN = re.compile(r"^(?:[小阿老][\u4e00-\u9fff]|([\u4e00-\u9fff])\1)$")  # 小美, 阿黄, 红红
_PERSON_FLAGS = ("nr", "nrfg", "nrt")
_NOT_NAME_FLAGS = ("p", "c", "u", "d", "v", "r", "y", "m", "q", "a")
_FUNCTION_FLAGS = (*_NOT_NAME_FLAGS, "t")


class _Words:
    """jieba's words of a text with their offsets, looked up by where they start."""

    def __init__(self, text: str) -> None:
        pairs = cjk_words(text)
        if "".join(p[0] for p in pairs) != text:
            pairs = []  # never seen; then only the pattern passes run
        self.items: list[tuple[int, str, str]] = []
        offset = 0
        for word, flag in pairs:
            self.items.append((offset, word, flag))
            offset += len(word)
        self.index = {start: i for i, (start, _, _) in enumerate(self.items)}
        self.bounds = set(self.index) | {len(text)}
        for start, word, _ in self.items:
            self.bounds |= _inner_bounds(start, word)

    def at(self, start: int) -> tuple[str, str] | None:
        i = self.index.get(start)
        return None if i is None else self.items[i][1:]

    def before(self, start: int) -> set[str]:
        """The word before the one starting at ``start``, and the one before that when
        the first is a particle ("搬到了广州" → {了, 搬到})."""
        i = self.index.get(start)
        if not i:
            return set()
        out = {self.items[i - 1][1]}
        if self.items[i - 1][1] in {"了", "过", "着", "的"} and i > 1:
            out.add(self.items[i - 2][1])
        return out

    def after(self, start: int) -> str:
        """The word right after the one starting at ``start`` ("" at the end)."""
        i = self.index.get(start)
        return self.items[i + 1][1] if i is not None and i + 1 < len(self.items) else ""


def _inner_bounds(start: int, word: str) -> set[int]:
    """Where a jieba word made only of relation words (and 叫) splits: 爷爷奶奶 → 爷爷|奶奶,
    狗叫 → 狗|叫 (jieba's dictionary holds such compounds as one word)."""
    cuts: set[int] = set()
    i = 0
    while i < len(word):
        size = next(
            (n for n in range(min(_LONGEST, len(word) - i), 0, -1) if word[i : i + n] in _PIECES),
            0,
        )
        if not size:
            return set()
        i += size
        cuts.add(start + i)
    return cuts


def find_zh(text: str, taken: Taken) -> list[EntityMention]:
    """The Chinese (and embedded Latin) mentions of ``text`` outside ``taken``."""
    words = _Words(text)
    out: list[EntityMention] = []
    for m in (*_TITLE.finditer(text), *_QUOTED_LATIN.finditer(text)):
        if taken.free(m.start(), m.end()):
            out.append(EntityMention(m.group(1), entity_key(m.group(1)), "work", None, *m.span(1)))
            taken.take(m.start(), m.end())
    out += _relations(text, words, taken)
    for start, word, flag in words.items:
        end = start + len(word)
        if not word.strip() or not taken.free(start, end):
            continue
        found = _tagged(text, words, start, word, flag)
        if found is not None:
            kind, end = found
            out.append(
                EntityMention(text[start:end], entity_key(text[start:end]), kind, None, start, end)
            )
            taken.take(start, end)
    return out


def _relations(text: str, words: _Words, taken: Taken) -> list[EntityMention]:
    out: list[EntityMention] = []
    for s in sorted(words.bounds):
        found = _relation_at(text, words, s)
        if found is None or not taken.free(s, found):
            continue
        e, said = found, text[s:found]
        relation = _ALL_RELATIONS[said]
        kind = "pet" if said in w.ZH_PETS else "person"
        called = _CALLED.match(text, e)
        name = _name_at(text, words, called.end() if called else e, bool(called))
        if name is not None:
            ns, ne = name
            out.append(EntityMention(text[ns:ne], entity_key(text[ns:ne]), kind, relation, ns, ne))
            taken.take(s, ne)
        elif said in w.ZH_KIN or (kind == "pet" and re.search(r"[我养]", text[max(0, s - 4) : s])):
            out.append(EntityMention(said, relation_key(relation), kind, relation, s, e))
            taken.take(s, e)
    return out


def _relation_at(text: str, words: _Words, start: int) -> int | None:
    """The end of the longest relation word that starts at ``start`` and ends where a
    jieba word ends (so 同学们 and 哥伦比亚 hold none), else None."""
    for size in range(_LONGEST, 0, -1):
        if text[start : start + size] in _ALL_RELATIONS and start + size in words.bounds:
            return start + size
    return None


def _name_at(text: str, words: _Words, pos: int, called: bool) -> tuple[int, int] | None:
    """The name said right after a relation word, if one is there."""
    latin = _LATIN_NAME.match(text, pos)
    if latin:
        return latin.span()
    found = words.at(pos)
    if found is None:
        return None
    word, flag = found
    if word in _ALL_RELATIONS or not _HAN.match(word):
        return None
    if called:
        return _called_name(words, pos)
    if 2 <= len(word) <= 4 and (
        flag.startswith("nr")
        or flag == "nz"
        or (_given(word) and not flag.startswith(_NOT_NAME_FLAGS))  # not 常常, 小心
    ):
        return pos, pos + len(word)
    if len(word) == 1:
        if word in w.ZH_SURNAMES and words.after(pos) in w.ZH_TITLES:
            return pos, pos + 1 + len(words.after(pos))  # 李大爷
        if _given(text[pos : pos + 2]) and pos + 2 in words.bounds:
            return pos, pos + 2  # jieba split an unknown name: 小/美
    return None


def _given(word: str) -> bool:
    """Shaped like a given name or nickname (小美, 阿黄, 红红), not an everyday word."""
    return _GIVEN.match(word) is not None and word not in w.ZH_NOT_GIVEN


def _called_name(words: _Words, pos: int) -> tuple[int, int] | None:
    """After 叫: the Han words that follow, up to three characters ("叫旺财", split 旺/财
    or not), stopping at a function word ("叫咪咪今年三岁" → 咪咪)."""
    end = pos
    while (found := words.at(end)) is not None:
        word, flag = found
        if not _HAN.match(word) or end - pos + len(word) > 3:
            break
        if flag.startswith(_FUNCTION_FLAGS) and (end > pos or flag.startswith("r")):
            break  # "叫咪咪今年…" ends at 今年; "妈妈叫我…" names no one
        end += len(word)
    return (pos, end) if end > pos else None


def _tagged(text: str, words: _Words, start: int, word: str, flag: str) -> tuple[str, int] | None:
    """(type, end) of a word that is a name by its tag or shape, else None."""
    end = start + len(word)
    nxt = words.after(start)
    if (_LATIN_NAME.fullmatch(word) and not word.isupper()) or _CAMEL.fullmatch(word):
        kind = _latin_type(word)
        return None if kind is None else (kind, end)
    if not _HAN.match(word):
        return None
    if len(word) == 1:
        if word in w.ZH_SURNAMES and nxt in w.ZH_TITLES:
            return "person", end + len(nxt)  # 王同学, 李大爷
        return None
    if word in _ALL_RELATIONS:
        return None
    if nxt in w.ZH_ORG_HEADS and flag.startswith(("nr", "ns", "nz", "nt")):
        return "organization", end + len(nxt)
    if _person_shaped(word, flag):
        if word[-1] in w.ZH_ANIMAL_ENDS:
            return None  # 东北虎, 小熊: an animal, though tagged or shaped as a name
        return ("product" if nxt in w.ZH_PRODUCT_HEADS else "person"), end  # 奥特曼玩具; 小张
    if flag == "ns":
        return ("place", end) if _place_context(words, start, word) else None
    kinds = {"nt": "organization", "nz": "other"}
    return (kinds[flag], end) if flag in kinds else None


def _person_shaped(word: str, flag: str) -> bool:
    """A person's name by its tag and its shape. jieba's dictionary tags many common words
    nr ("翠绿色", "花园里"), so an nr word must open with a surname or be a nickname (小美,
    阿黄, 红红), and an nrt word (a transliteration) be made of transliteration characters
    ("威武" is not); 小/老 with a surname is a name whatever the tag (小张, 老王)."""
    if len(word) == 2 and word[0] in "小老" and word[1] in w.ZH_SURNAMES:
        return True
    if flag == "nrt":
        return all(ch in w.ZH_TRANSLITERATION for ch in word)
    if flag in ("nr", "nrfg"):
        return word[0] in w.ZH_SURNAMES or word[:2] in w.ZH_COMPOUND_SURNAMES or _given(word)
    return False


def _place_context(words: _Words, start: int, word: str) -> bool:
    """An ns word is a place when it ends like one (…市, …山) or a word that goes with
    places is next to it ("搬到了广州", "深圳的"): jieba also tags "台风", "长跑" ns."""
    if word in w.ZH_GENERIC_PLACES:
        return False  # "新城市": a kind of place, not one
    if word[-1] in w.ZH_PLACE_ENDS:
        return True
    if words.after(start) in w.ZH_PLACE_AFTER:
        return True
    before = words.before(start)
    return bool(before & w.ZH_PLACE_BEFORE)


def _latin_type(word: str) -> str | None:
    key = entity_key(word)
    if key in w.EN_NOT_NAMES or key in EN_STOP:
        return None  # "May", "Christmas", "The"
    if key in w.EN_ORGS:
        return "organization"
    if key in w.EN_PRODUCTS or _CAMEL.fullmatch(word):
        return "product"
    if key in w.EN_PLACES:
        return "place"
    return "person"

"""core.posseg_viterbi: jieba's POS Viterbi, the same answers."""

from __future__ import annotations

import random

import jieba.posseg
import pytest
from jieba.posseg import char_state_tab_P, emit_P, start_P, trans_P
from jieba.posseg.viterbi import viterbi as jieba_viterbi

from core import posseg_viterbi
from core.sameness import cjk_words

SENTENCES = [
    "张三在深圳的腾讯工作，女儿今年三岁。",
    "我们刚从上海搬到杭州，住在西湖区。",
    "李雷下周二要去北京见王小明和韩梅梅",
    "把比亚迪汉卖了，换了一辆特斯拉Model 3",
    "阿依古丽的生日是五月十二号，她喜欢吃抓饭",
    "欧阳娜娜和司马光在2023年去了乌鲁木齐",
    "用户说他对花生过敏，不能吃坚果",
    "嗯嗯哈哈哈好的呀",
    "奥尔加·托卡尔丘克获得了诺贝尔文学奖",
]


def _random_runs(n: int, seed: int) -> list[str]:
    """Runs of characters jieba's dictionary rarely joins: the HMM's whole work."""
    rng = random.Random(seed)
    chars = [c for c in char_state_tab_P if "\u4e00" <= c <= "\u9fff"]
    return ["".join(rng.choice(chars) for _ in range(rng.randint(1, 12))) for _ in range(n)]


@pytest.mark.parametrize("text", SENTENCES + _random_runs(400, 7))
def test_the_same_path_as_jiebas(text):
    want = jieba_viterbi(text, char_state_tab_P, start_P, trans_P, emit_P)
    assert posseg_viterbi.viterbi(text, char_state_tab_P, start_P, trans_P, emit_P) == want


def test_the_same_tags_through_posseg():
    cjk_words("预热")  # installs ours
    assert jieba.posseg.viterbi is posseg_viterbi.viterbi
    for text in SENTENCES:
        ours = [(p.word, p.flag) for p in jieba.posseg.lcut(text)]
        jieba.posseg.viterbi = jieba_viterbi
        try:
            theirs = [(p.word, p.flag) for p in jieba.posseg.lcut(text)]
        finally:
            jieba.posseg.viterbi = posseg_viterbi.viterbi
        assert ours == theirs


def test_a_state_no_state_leads_to_is_jiebas_answer():
    # two states, neither leading anywhere after the first character: jieba's own
    # function decides (here: its max over no previous state raises)
    states = {"a": [("B", "x")], "b": [("E", "y")]}
    start = {("B", "x"): -1.0, ("E", "y"): -2.0}
    trans = {("B", "x"): {}, ("E", "y"): {}}
    emit = {("B", "x"): {"a": -0.5}, ("E", "y"): {"b": -0.5}}
    with pytest.raises(ValueError):
        jieba_viterbi("ab", states, start, trans, emit)
    with pytest.raises(ValueError):
        posseg_viterbi.viterbi("ab", states, start, trans, emit)
    assert posseg_viterbi.viterbi("a", states, start, trans, emit) == jieba_viterbi(
        "a", states, start, trans, emit
    )

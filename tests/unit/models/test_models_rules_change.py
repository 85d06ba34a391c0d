"""Supersession without an LLM: a statement that names what ended (models.rules.change)."""

from __future__ import annotations

import pytest

from memstream.schemas.enums import OpType
from memstream.schemas.facts import Similar
from models.llm.rules import RulesLLM
from models.rules.change import ended, subject_of, superseded_by


@pytest.mark.parametrize(
    ("text", "values"),
    [
        ("Sold a Subaru Outback, we got a Tesla Model 3 instead", ("subaru outback",)),
        ("Aisha said on 2023-04-27: Sold my VW Golf, got a Prius", ("vw golf",)),
        ("Hannah quit badminton, playing water polo now", ("badminton",)),
        ("Update: we left Berlin, we live in Lisbon now", ("berlin",)),
        ("Big news, I left Zalando, I'm at Stripe now", ("zalando",)),
        ("We just moved from Berlin to Copenhagen, new chapter!", ("berlin",)),
        ("I switched from Android to an iPhone", ("android",)),
        ("把比亚迪汉卖了，换了辆理想L7", ("比亚迪汉",)),
        ("我们刚从上海搬到杭州，新生活开始！", ("上海",)),
        ("更新一下：我们离开北京了，现在住深圳", ("北京",)),
        ("大消息：我从腾讯离职了，现在在美团上班", ("腾讯",)),
        ("不玩网球了，现在改玩排球", ("网球",)),
        ("She left early", ()),  # no thing named
        ("I drive a Tesla now", ()),
        ("我现在开理想L7", ()),
    ],
)
def test_ended_values(text, values):
    assert ended(text) == values


@pytest.mark.parametrize(
    ("text", "who"),
    [
        ("Aisha said on 2023-04-27: Sold a Subaru", "aisha"),
        ("Aisha's sister Ana had a baby girl", "aisha"),
        ("Aisha drives a Subaru Outback now", "aisha"),
        ("王芳在2023-05-01说：把比亚迪汉卖了", "王芳"),
        ("王芳现在开比亚迪汉", "王芳"),
    ],
)
def test_subject_of(text, who):
    assert subject_of(text) == who


def test_superseded_needs_same_subject_and_the_value_as_a_whole_word():
    new = "Aisha said on 2023-04-27: Sold a Subaru Outback, we got a Tesla instead"
    assert superseded_by(new, "Aisha drives a Subaru Outback now, love it")
    assert not superseded_by(new, "Tomás drives a Subaru Outback now")  # someone else's
    assert not superseded_by(new, "Aisha drives a Subaru Outbacker")  # not the word
    assert not superseded_by("Aisha drives a Tesla now", "Aisha drives a Subaru Outback")


def test_a_chain_of_changes_supersedes_the_previous_change_not_its_ended_value():
    latest = "Hannah said on 2023-05-07: Sold a VW Golf, we got a Toyota Prius instead"
    # the previous change stated the Golf as current: superseded
    assert superseded_by(latest, "Hannah said on 2023-04-14: Sold a Mini, we got a VW Golf")
    # a statement that itself ended the Golf states nothing current about it
    assert not superseded_by(latest, "Hannah said on 2023-04-14: Sold a VW Golf, got a Mini")


def test_chinese_supersession():
    assert superseded_by(
        "王芳在2023-05-01说：把比亚迪汉卖了，换了辆理想L7", "王芳现在开比亚迪汉，很喜欢"
    )
    assert not superseded_by("王芳在2023-05-01说：把比亚迪汉卖了", "李雷现在开比亚迪汉")


def test_decide_adds_the_new_fact_and_supersedes_what_it_ended():
    decisions = RulesLLM().decide(
        "Aisha said on 2023-07-14: We just moved from Berlin to Copenhagen",
        [
            ("m1", "Aisha finally moved to Berlin", 0.88),
            ("m2", "Aisha said on 2023-04-27: Still unpacking boxes", 0.84),
            ("m3", "Tomás lives in Berlin", 0.83),
        ],
    )
    assert [(d.op, d.target_id) for d in decisions] == [(OpType.ADD, None), (OpType.DELETE, "m1")]


def test_a_near_duplicate_is_still_none_even_when_it_names_an_ended_value():
    decisions = RulesLLM(0.95).decide(
        "Aisha quit Stripe",
        [("m1", "Aisha quit Stripe", 0.99), ("m2", "Aisha works at Stripe", 0.9)],
    )
    assert [(d.op, d.target_id) for d in decisions] == [(OpType.NONE, "m1")]


def test_a_consolidated_memory_is_never_superseded_by_the_rules():
    merged = "Liu said on 2023-04-12: Sold a VW Golf, got a Prius; quit volleyball, play tennis now"
    decisions = RulesLLM().decide(
        "Liu said on 2023-05-27: I quit tennis, playing badminton now",
        [Similar("m1", merged, 0.9, merged=True), Similar("m2", "Liu joined a tennis team", 0.8)],
    )
    assert [(d.op, d.target_id) for d in decisions] == [(OpType.ADD, None), (OpType.DELETE, "m2")]

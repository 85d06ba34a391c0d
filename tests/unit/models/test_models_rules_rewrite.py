"""First person → the speaker, and the verb after it, never an adverb, conjugated."""

from __future__ import annotations

import pytest

from models.rules.rewrite import is_adverb, rewrite_en, rewrite_zh, third_person


@pytest.mark.parametrize(
    ("clause", "expected"),
    [
        ("I once visited Rome", "User once visited Rome"),
        ("I once lived in Rome", "User once lived in Rome"),
        ("I twice ran a marathon", "User twice ran a marathon"),
        ("I first met Ana in 2019", "User first met Ana in 2019"),
        ("I recently started yoga", "User recently started yoga"),
        ("I finally quit smoking", "User finally quit smoking"),
        ("I ever wonder why", "User ever wonders why"),
        ("I also play chess", "User also plays chess"),
        ("I just love jazz", "User just loves jazz"),
        ("I soon leave for Oslo", "User soon leaves for Oslo"),
        ("I later moved to Oslo", "User later moved to Oslo"),
        ("I then take the bus", "User then takes the bus"),
        ("I barely sleep", "User barely sleeps"),
        ("I hardly ever watch TV", "User hardly ever watches TV"),
        ("I really really like tea", "User really really likes tea"),
        ("I eventually want a dog", "User eventually wants a dog"),
        ("I secretly hate jazz", "User secretly hates jazz"),
        ("I kind of miss Lisbon", "User kind of misses Lisbon"),
        ("I no longer eat meat", "User no longer eats meat"),
        ("I usually am late", "User usually is late"),
        # verbs that end in -ly are verbs
        ("I apply for jobs", "User applies for jobs"),
        ("I fly to Tokyo", "User flies to Tokyo"),
        ("I reply fast", "User replies fast"),
    ],
)
def test_adverbs_between_the_subject_and_its_verb_are_skipped(clause, expected):
    assert rewrite_en(clause, "User") == expected


@pytest.mark.parametrize(
    ("word", "adverb"),
    [
        ("once", True),
        ("recently", True),
        ("Secretly", True),
        ("apply", False),
        ("fly", False),
        ("only", True),
        ("visit", False),
        ("rely", False),
    ],
)
def test_is_adverb(word, adverb):
    assert is_adverb(word) is adverb


def test_third_person_still_conjugates_verbs():
    assert [third_person(v) for v in ("play", "watch", "study", "go", "have", "went")] == [
        "plays",
        "watches",
        "studies",
        "goes",
        "has",
        "went",
    ]


def test_names_are_inserted_literally():
    # a name is text, never a regex replacement template
    assert rewrite_en("I met you", "A\\1", "B\\g<0>") == "A\\1 met B\\g<0>"
    assert rewrite_zh("我见了你", "A\\1", "B\\2") == "A\\1见了B\\2"
    assert rewrite_en("your dog likes my cat", "Priya", "Tomás") == (
        "Tomás's dog likes Priya's cat"
    )

"""The check of an LLM's profile summary (core.profile_summary;
docs/architecture.md#the-profile): grounded answers become items citing exactly their
sources; invented specifics, bad citations and answers over the budget are refused."""

from __future__ import annotations

from core.profile import ProfileItem
from core.profile_summary import check_summary, grounded_summary, ungrounded

PLANNED = [
    ProfileItem("Priya works as a nurse in Leeds", ("m1", "m2"), ("t1", "t2"), "Priya"),
    ProfileItem("Priya is a night-shift nurse", ("m3",), ("t2", "t3"), "Priya"),
    ProfileItem("Priya went to a pottery class on 2023-05-07", ("m4",), ("t4",)),
    ProfileItem("用户住在深圳，每天早上喝龙井", ("m5",), ("t5",)),
]


def test_a_grounded_summary_cites_exactly_the_union_of_its_items():
    answer = [
        ("Priya is a night-shift nurse in Leeds", [1, 0]),
        ("Priya went to pottery on 2023-05-07", [2]),
    ]
    items = grounded_summary(PLANNED, answer, 200)
    assert items == [
        # memories and turns in reading order, each once, whatever order the model cited
        ProfileItem("Priya is a night-shift nurse in Leeds", ("m1", "m2", "m3"), ("t1", "t2", "t3"), "Priya"),
        ProfileItem("Priya went to pottery on 2023-05-07", ("m4",), ("t4",), None),
    ]  # fmt: skip


def test_an_entity_is_kept_only_when_every_cited_item_is_about_it():
    items = grounded_summary(PLANNED, [("Priya is a nurse; pottery on 2023-05-07", [0, 2])], 200)
    assert items is not None and items[0].entity is None
    assert items[0].memory_ids == ("m1", "m2", "m4")


def test_an_invented_name_number_or_date_is_refused():
    for invented in [
        "Priya is a nurse in Manchester",  # a place
        "Priya and Tomás are nurses in Leeds",  # a person
        "Priya has worked as a nurse in Leeds for 12 years",  # a number
        "Priya has been a nurse in Leeds since 2019-01-01",  # a date
    ]:
        checked = check_summary(PLANNED, [(invented, [0, 1])], 200)
        assert checked.items is None
        assert "statement 1 states" in (checked.reason or "")
    # grounded in the plan, but not in the items it cites: refused too
    assert grounded_summary(PLANNED, [("Priya went to pottery on 2023-05-07", [0])], 200) is None
    # Chinese: a place the item does not hold
    assert grounded_summary(PLANNED, [("用户住在广州", [3])], 200) is None
    assert grounded_summary(PLANNED, [("用户住在深圳，早上喝龙井", [3])], 200) is not None


def test_specifics_are_matched_as_words_not_substrings():
    assert ungrounded("Priya has 3 kids", ["Priya was born in 2023"]) == 1  # "3" ≠ "2023"
    assert ungrounded("Anna's sister lives in Porto", ["Anna has a sister in Porto"]) == 0
    assert ungrounded("Anna lives in Porto", ["Anna’s flat is in Porto"]) == 0
    assert ungrounded("用户2023年去过深圳", ["用户在2023年去过深圳和广州"]) == 0
    assert ungrounded("用户2024年去过深圳", ["用户在2023年去过深圳和广州"]) == 1


def test_an_answer_over_the_budget_is_refused_never_clipped():
    text = "Priya is a night-shift nurse in Leeds"  # 37 chars
    assert grounded_summary(PLANNED, [(text, [0, 1])], len(text)) is not None
    checked = check_summary(PLANNED, [(text, [0, 1])], len(text) - 1)
    assert checked.items is None and checked.reason == "the summary has 37 chars, the budget is 36"


def test_bad_citations_and_empty_answers_are_refused():
    cases = {
        "the summary is empty": [],
        "statement 1 is empty": [("  ", [0])],
        "statement 1 cites no item": [("Priya is a nurse", [])],
        "statement 2 cites 1 item(s) that do not exist": [
            ("Priya is a nurse", [0]),
            ("Priya is a nurse", [4]),
        ],
        "statement 1 cites 1 item(s) that do not exist": [("Priya is a nurse", [-1])],
    }
    for reason, answer in cases.items():
        checked = check_summary(PLANNED, answer, 200)
        assert (checked.items, checked.reason) == (None, reason)


def test_a_refusal_never_quotes_the_memories():
    checked = check_summary(PLANNED, [("Priya is a nurse in Manchester", [0])], 200)
    assert checked.reason is not None
    assert "Manchester" not in checked.reason and "Priya" not in checked.reason

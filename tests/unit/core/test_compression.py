"""Which memories may merge, and what they become (core.compression;
docs/architecture.md#consolidation-and-paged-out-memories)."""

from __future__ import annotations

import pytest

from core.compression import FRAME, MARGIN, SAME, compresses, merged_text, shape

BAKERY = [f"I visited Zorvath{k:03d} and loved its bakery" for k in range(1, 4)]


@pytest.mark.parametrize(
    ("texts", "expected"),
    [
        (BAKERY, "I visited Zorvath001, Zorvath002 and Zorvath003 and loved its bakery"),
        (
            ["Caroline flew to Osaka on 2024-05-01 for a wedding", "Caroline flew to Lima on "
             "2024-05-01 for a wedding"],
            "Caroline flew to Osaka and Lima on 2024-05-01 for a wedding",
        ),
        (
            ["Met Priya at the cafe on May 7, 2023", "Met Priya at the cafe on June 1, 2024"],
            "Met Priya at the cafe on May 7, 2023 and June 1, 2024",
        ),
        (["用户去过深圳出差并且很喜欢那里", "用户去过广州出差并且很喜欢那里"],
         "用户去过深圳和广州出差并且很喜欢那里"),
        (["张三在2023年5月7日参加了马拉松比赛", "张三在2024年6月1日参加了马拉松比赛"],
         "张三在2023年5月7日和2024年6月1日参加了马拉松比赛"),
    ],
)  # fmt: skip
def test_the_same_frame_with_other_values_lists_the_values_once(texts, expected):
    assert merged_text(texts, 320) == (expected, FRAME)


def test_a_merged_list_takes_more_values_and_flattens():
    merged, _ = merged_text(BAKERY, 320)
    again = merged_text([merged, "I visited Zorvath004 and loved its bakery"], 320)
    assert again == (
        "I visited Zorvath001, Zorvath002, Zorvath003 and Zorvath004 and loved its bakery",
        FRAME,
    )
    # a value already listed is not listed twice
    assert merged_text([merged, BAKERY[0]], 320) == (merged, FRAME)


@pytest.mark.parametrize(
    "texts",
    [
        ["I love spicy ramen", "i love spicy ramen!", "I love spicy ramen."],
        ["Priya is allergic to peanuts", "priya is ALLERGIC to peanuts."],
        ["用户每天早上喝一杯龙井", "用户每天早上喝一杯龙井。"],
        ["Caroline joined the LGBTQ support group in 2023", "In 2023 Caroline joined the "
         "LGBTQ support group"],
    ],
)  # fmt: skip
def test_the_same_fact_repeated_becomes_its_most_complete_telling(texts):
    text, kind = merged_text(texts, 320)
    assert kind == SAME and text in texts and len(text) == max(len(t) for t in texts)


@pytest.mark.parametrize(
    "texts",
    [
        # related, or told in one session, but different things: never joined
        ["I painted a sunrise last week", "I joined a support group", "I sang at a talent show"],
        ["Melanie went to a support group on 2023-05-07",
         "Melanie went to a talent show on 2023-05-07"],
        ["Priya started a pottery class on 2023-05-07", "Priya's pottery class meets on Tuesdays"],
        ["I love spicy ramen with extra garlic", "I love spicy ramen with extra cheese"],
        ["I have a dog", "I have a dog allergy"],
        ["I like cats", "I do not like cats"],
        ["用户喜欢喝绿茶", "用户喜欢喝咖啡"],
        ["用户喜欢猫", "用户不喜欢猫"],
        ["用户在深圳工作", "用户的女儿在上海读书"],
        # the same numbers and names do not make the same fact
        ["Tom was born in 1990", "Tom moved to Berlin in 1990"],
        # a capitalized first word is no slot; a frame needs two content words
        ["Loves green tea", "Hates green tea"],
        ["Priya loves tea", "Tomas loves tea"],
        ["I visited Paris", "I visited Rome"],
        ["User lives in Berlin", "User lives in Lisbon"],
        ["用户住在深圳", "用户住在广州"],
        # two slots differ: two facts
        ["Flew to Osaka on 2024-05-01", "Flew to Lima on 2024-06-01"],
        # another count, year or time is a changed state, not a list
        ["User has 3 kids", "User has 4 kids"],
        ["User moved to Porto in 2019", "User moved to Porto in 2021"],
        ["The meeting is at 3pm on Friday", "The meeting is at 4pm on Friday"],
        ["User runs 5 km every morning", "User runs 10 km every morning"],
        ["我每天跑5公里", "我每天跑10公里"],
    ],
)  # fmt: skip
def test_merely_related_or_different_statements_never_merge(texts):
    assert merged_text(texts, 320) is None


def test_a_merge_must_fit_the_bound_and_compress_by_a_real_margin():
    assert merged_text(BAKERY, 40) is None  # the list would be longer than the bound
    text, _ = merged_text(BAKERY, 320)
    total = sum(map(len, BAKERY))
    assert len(text) <= MARGIN * total and compresses(text, BAKERY, 320)
    assert not compresses(text, BAKERY, len(text) - 1)
    assert not compresses("; ".join(BAKERY), BAKERY, 10_000)  # a join is no compression
    assert merged_text(["one memory"], 320) is None


def test_every_members_names_numbers_and_dates_stay_findable():
    texts = [f"Ran the Lisbon half marathon in {m} minutes on 2024-0{k}-10" for k, m in
             ((3, 101), (4, 101), (5, 101))]  # fmt: skip
    text, kind = merged_text(texts, 320)
    assert kind == FRAME
    for t in texts:
        for token in ("lisbon", "101", t.rsplit(" ", 1)[1]):
            assert token in text.casefold()


def test_shapes_are_remembered_and_ignore_case_and_punctuation():
    assert shape("I love tea.") is shape("I love tea.")
    assert shape("I love tea.").same_key == shape("i LOVE tea!").same_key

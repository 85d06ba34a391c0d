"""Clause splitting: lead-ins that carry no content are not clauses (models.rules.clauses)."""

from __future__ import annotations

import pytest

from models.rules.clauses import split_clauses


@pytest.mark.parametrize(
    ("turn", "clauses"),
    [
        (
            "Hmm. Big news, I left Duolingo, I'm at Figma now",
            ["I left Duolingo", "I'm at Figma now"],
        ),
        (
            "Update: we left Berlin, we live in Lisbon now",
            ["we left Berlin, we live in Lisbon now"],
        ),
        ("Guess what! I got the job", ["I got the job"]),
        ("Also", []),
        ("The update broke my phone.", ["The update broke my phone."]),  # a word, not a lead-in
        ("对了，把蔚来ET5卖了，换了辆大众高尔夫", ["把蔚来ET5卖了，换了辆大众高尔夫"]),
        ("话说，不玩网球了", ["不玩网球了"]),
        ("大消息：我从网易离职了", ["我从网易离职了"]),
        ("对，我住在深圳", ["我住在深圳"]),
    ],
)
def test_lead_ins_are_not_clauses(turn, clauses):
    assert split_clauses(turn) == clauses

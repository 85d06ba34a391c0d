"""``carries_content``: the one definition of which turns the no-LLM mode keeps."""

from __future__ import annotations

import pytest

from models.rules.content import carries_content, content_clauses, strip_vocatives

NAMES = ("Priya", "Tomás", "王芳")

CONTENT = [
    # third person and statements without "I"
    "That pottery class last night was amazing!",
    "Our new puppy keeps chewing the shoes",
    "My sister Ana just got engaged to Leo",
    "The marathon in Boston is on April 17",
    "Ana loves hiking",
    "The kids start school on Monday",
    "Boston was freezing",
    "We adopted a cat named Miso",
    "Let's grab coffee next week",
    # subject-less and first person
    "Had a blast at the concert last night!",
    "Went hiking with Ana yesterday",
    "Just finished my first half marathon!",
    "I moved to Denver last month",
    # a statement wrapped in a reaction, a vocative or a question
    "Wow, the new job at Google sounds amazing, Priya!",
    "Haha yes, Miso knocked over the plant again",
    "Thanks! The recipe is from my grandma.",
    "I just got back from Lisbon, have you been?",
    # Chinese
    "公司下个月要搬到杭州",
    "我昨天开始学陶艺",
    "王芳的狗特别可爱",
    "昨天的演唱会太精彩了",
    "他下个月结婚",
    "我们下周去爬山吧",
    "我刚从里斯本回来，你去过吗？",
    "你一定要试试那家拉面店",
]

CHIT_CHAT = [
    "Wow, cool!",
    "Haha nice",
    "How are you?",
    "Thanks so much!",
    "Good morning!",
    "Sounds great",
    "That's awesome!",
    "I'm so happy for you!",
    "That sounds like so much fun!",
    "Good luck with that!",
    "Take care!",
    "See you later!",
    "Me too!",
    "Congrats!",
    "That's amazing, Priya!",
    "Hey Tomás!",
    "Priya, how are you?",
    "I'm doing well, thanks",
    "Have a great weekend!",
    "Sounds like a plan!",
    "Enjoy your trip!",
    "You're welcome",
    "No worries",
    "That makes sense",
    "I know right?",
    "Oh no, I'm sorry to hear that",
    "Keep me posted!",
    "Can't wait to hear about it!",
    "Hahaha 😂",
    "lol",
    "What a day!",
    "How cool is that!",
    "Tell me more!",
    "Please tell me a joke.",
    "Oh wow, really?",
    "Hope you're doing well",
    "I'm good, how about you?",
    "好的",
    "哈哈太棒了",
    "你最近怎么样？",
    "你最近怎么样",
    "太好了！",
    "真的吗？",
    "加油！",
    "恭喜你！",
    "哈哈哈哈",
    "好久不见",
    "没问题",
    "祝你好运",
    "听起来不错",
    "回头聊",
    "辛苦了",
    "不客气",
    "我很好，谢谢",
    "哇，好羡慕啊",
    "嗯嗯，好的",
    "周末愉快",
    "王芳，你太厉害了！",
    "谢谢你的建议",
    "请帮我订一张机票。",
]


@pytest.mark.parametrize("text", CONTENT)
def test_content_bearing_turns_carry_content(text):
    assert carries_content(text, NAMES)


@pytest.mark.parametrize("text", CHIT_CHAT)
def test_chit_chat_questions_and_requests_do_not(text):
    assert not carries_content(text, NAMES)


def test_only_the_statement_of_a_question_is_kept():
    assert content_clauses("I just got back from Lisbon, have you been?") == [
        "I just got back from Lisbon"
    ]
    assert content_clauses("我刚从里斯本回来，你去过吗？") == ["我刚从里斯本回来"]


def test_greetings_and_reactions_are_peeled_off_the_kept_clauses():
    assert content_clauses("Hi Tomás! Wow, the pottery class was great. Sounds fun?") == [
        "the pottery class was great."
    ]


@pytest.mark.parametrize(
    ("clause", "names", "expected"),
    [
        ("That's amazing, Priya!", (), "That's amazing"),
        ("Priya, the class starts at nine", (), "the class starts at nine"),
        ("Priya!", ("Priya",), ""),
        ("tomás, look at this", ("Tomás",), "look at this"),
        ("王芳你太厉害了", ("王芳",), "你太厉害了"),
        ("My sister Ana got engaged", (), "My sister Ana got engaged"),
    ],
)
def test_vocatives_are_only_the_addressee(clause, names, expected):
    assert strip_vocatives(clause, names) == expected

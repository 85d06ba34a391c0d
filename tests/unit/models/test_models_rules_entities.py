"""Entity extraction by rules: who and what a text names, English and Chinese."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from models.rules.entities import extract_entities
from models.rules.entity_mention import BUILTIN_TYPES, entity_key


def found(text: str) -> set[tuple[str, str, str | None]]:
    """(name, type, relation) of each mention."""
    return {(m.name, m.type, m.relation) for m in extract_entities(text).mentions}


def names(text: str, kind: str | None = None, speaker_names: Sequence[str] = ()) -> list[str]:
    """The names found, in order (of one type when ``kind`` is given)."""
    mentions = extract_entities(text, speaker_names=speaker_names).mentions
    return [m.name for m in mentions if kind is None or m.type == kind]


# --- English -------------------------------------------------------------------------


def test_a_named_relation_is_a_person_with_its_relation():
    assert ("Anna", "person", "sister") in found("I went hiking with my sister Anna.")
    assert ("Mel", "person", "best friend") in found("Yesterday my best friend Mel called me.")
    assert ("Tom", "person", "brother") in found("My little brother, Tom, moved out.")


def test_an_unnamed_kin_word_is_the_relation_itself():
    (mom,) = extract_entities("I called my mom last night.").mentions
    assert (mom.name, mom.key, mom.type, mom.relation) == ("mom", "rel:mother", "person", "mother")
    assert extract_entities("My mum loves gardening.").mentions[0].key == "rel:mother"


def test_a_capitalised_kin_word_is_the_relation():
    (mom,) = extract_entities("Mom said I should rest.").mentions
    assert (mom.key, mom.relation) == ("rel:mother", "mother")


def test_a_friend_without_a_name_is_no_entity():
    assert names("I had lunch with a friend from work.") == []


def test_pets_by_name():
    assert ("Max", "pet", "dog") in found("I walked my dog Max this morning.")
    assert ("Luna", "pet", "cat") in found("We adopted a kitten named Luna.")
    # the same name later in the text is still the pet
    assert {m.type for m in extract_entities("My dog Max is old. I love Max.").mentions} == {"pet"}


def test_places_after_their_prepositions():
    assert ("Guangzhou", "place", None) in found("Last year I moved to Guangzhou for work.")
    assert ("Berlin", "place", None) in found("My brother lives in Berlin.")
    assert ("Lisbon", "place", None) in found("I'm from Lisbon originally.")
    assert ("Louvre", "place", None) in found("We visited the Louvre last summer.")


def test_organisations_and_products_by_their_cues():
    assert ("Acme", "organization", None) in found("I work at Acme as a designer.")
    assert ("Stanford University", "organization", None) in found(
        "She studied at Stanford University."
    )
    assert ("Google", "organization", None) in found("My wife joined Google.")
    assert ("iPhone", "product", None) in found("I dropped my new iPhone.")
    assert ("Kindle", "product", None) in found("I read on a Kindle.")


def test_possessives_are_folded():
    (anna,) = extract_entities("I borrowed Anna's car.").mentions
    assert (anna.name, anna.key) == ("Anna", "anna")
    assert entity_key("Anna's") == entity_key("anna") == entity_key(" ANNA, ") == "anna"
    assert entity_key("James'") == "james"
    text = "I borrowed Anna's car."
    assert text[anna.start : anna.end] == "Anna"


def test_may_the_month_and_other_calendar_words_are_not_people():
    assert names("We are going to Paris in May.", "person") == []
    assert names("See you on Monday, and happy Christmas Eve!") == []
    assert names("My birthday is May 5th.") == []


def test_sentence_initial_ordinary_words_are_not_names():
    assert names("Cooking is fun. Honestly I love it. Thanks!") == []
    assert names("I think so. OK, TV is boring.") == []
    assert names("Happy Birthday! Thank You so much, and I’m glad.") == []


def test_a_sentence_initial_name_counts_when_it_is_known():
    assert names("Anna called me. Later I met Anna for coffee.", "person") == ["Anna", "Anna"]
    assert names("Priya started a pottery class.", speaker_names=["Priya"]) == ["Priya"]


def test_speaker_names_are_people_in_any_case_unless_an_ordinary_word():
    assert names("priya and I went out", speaker_names=["Priya"]) == ["priya"]
    assert names("I will go there", speaker_names=["Will"]) == []
    assert names("Will said he will come", speaker_names=["Will"]) == ["Will"]


def test_titles_and_multiword_names():
    assert ("Dr. Lee", "person", None) in found("I saw Dr. Lee about my back.")
    assert ("Anna Smith", "person", None) in found("I met Anna Smith at the conference.")
    assert ("New York", "place", None) in found("She flew to New York.")


def test_spans_index_the_text():
    text = "Last week my sister Anna and I visited Rome with Tom."
    for m in extract_entities(text).mentions:
        assert text[m.start : m.end] == m.name


# --- Chinese -------------------------------------------------------------------------


def test_zh_a_named_relation():
    assert ("小美", "person", "妹妹") in found("我妹妹小美下个月结婚")
    assert ("Jimmy", "person", "朋友") in found("Bart与好友Jimmy分享自己收藏的邮票")
    assert ("浩浩", "person", "堂弟") in found("Bart和堂弟浩浩在家中玩耍")


def test_zh_kin_alone_is_the_relation():
    got = found("妈妈送给Lisa一只小熊玩偶，爷爷奶奶也来了")
    assert ("妈妈", "person", "妈妈") in got
    assert ("爷爷", "person", "爷爷") in got and ("奶奶", "person", "奶奶") in got
    keys = {m.key for m in extract_entities("Bart从祖父那里收到了一块怀表").mentions}
    assert "rel:爷爷" in keys  # 祖父 and 爷爷 are one relation


def test_zh_people_places_and_organisations_by_pos():
    assert ("广州", "place", None) in found("我去年从深圳搬到了广州")
    assert ("深圳", "place", None) in found("我去年从深圳搬到了广州")
    assert ("王同学", "person", None) in found("Lisa和王同学一起打扫教室")
    assert ("小张", "person", None) in found("我和小张一起吃饭")
    assert names("Bart因为搬家到一个新城市感到孤独", "place") == []


def test_zh_a_pet_by_name():
    assert ("旺财", "pet", "狗") in found("我家的狗叫旺财")
    assert ("小美", "person", "妹妹") in found("我妹妹叫小美")
    assert all(m.name != "我" for m in extract_entities("妈妈叫我回家").mentions)
    assert {m.name for m in extract_entities("妈妈常常说，妹妹小心点").mentions} == {"妈妈", "妹妹"}


def test_zh_animals_and_toys_are_not_people():
    people = names("爸爸带Lisa去动物园，看到了大东北虎", "person")
    assert "Lisa" in people and not any("虎" in p for p in people)
    assert not any("熊" in p for p in names("妈妈送给Lisa一只小熊玩偶", "person"))
    assert "奥特曼" not in names("爸爸送给Bart一个奥特曼玩具", "person")


def test_zh_titles_are_works():
    assert ("三体", "work", None) in found("我在图书馆发现了《三体》")


def test_zh_relation_words_inside_longer_words_are_none():
    assert names("同学们都来了") == []


# --- types and odd input -------------------------------------------------------------


def test_declared_types_keep_only_those():
    text = "My sister Anna moved to Berlin and works at Acme."
    got = extract_entities(text, types=["place"])
    assert [m.name for m in got.mentions] == ["Berlin"]
    assert got.unsupported == ()
    assert {m.type for m in extract_entities(text, types=["People", "Locations"]).mentions} == {
        "person",
        "place",
    }
    assert extract_entities(text, types=[]).mentions == ()


def test_an_unsupported_declared_type_is_reported_not_raised():
    got = extract_entities("I love the mapo tofu at Chen's.", types=["dish", "place", "Dish"])
    assert got.unsupported == ("dish",)
    assert got.warnings == (
        "entity type 'dish' is not recognised by the rules extractor and was ignored",
    )
    assert all(m.type == "place" for m in got.mentions)


def test_a_lone_string_is_one_type_or_one_name():
    got = extract_entities("Priya moved to Berlin.", speaker_names="Priya", types="place")
    assert [m.name for m in got.mentions] == ["Berlin"] and got.unsupported == ()


def test_no_types_means_the_built_in_ones():
    assert extract_entities("x").unsupported == ()
    assert set(BUILTIN_TYPES) >= {"person", "place", "organization", "product", "pet"}


@pytest.mark.parametrize(
    "text",
    [
        "",
        " ",
        "!!!",
        "。",
        "🎉🎉",
        "'s",
        "My",
        "my",
        "《》",
        "《",
        "我",
        "叫",
        "我家的狗叫",
        "\n\n\t",
        "A",
        "Mr.",
        "my sister",
        "my sister,",
        "Dr. .",
        "🙂 Anna 🙂",
        "我妹妹",
    ],
)
def test_odd_text_does_not_crash(text):
    for m in extract_entities(text, speaker_names=["", " ", "Anna"]).mentions:
        assert text[m.start : m.end] == m.name and m.key


def test_long_text_is_handled():
    text = "My sister Anna moved to Berlin. " * 2_000 + "我妹妹小美搬到了广州。" * 500
    mentions = extract_entities(text).mentions
    assert len(mentions) >= 2_000
    zh = extract_entities("我妹妹小美搬到了广州。" * 2_000).mentions
    assert {m.name for m in zh} >= {"小美", "广州"}


def test_zh_a_quoted_latin_title_is_a_work_not_people():
    got = found('Lisa参加期待的电影"Minions: The Rise of Gru"首映')
    assert ("Minions: The Rise of Gru", "work", None) in got
    assert {n for n, kind, _ in got if kind == "person"} == {"Lisa"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("User's sister Anna lives in Lyon.", ("Anna", "anna", "sister")),
        ("The user's sister loves hiking.", ("sister", "rel:sister", "sister")),
        ("用户妹妹小美住在上海", ("小美", "小美", "妹妹")),
    ],
)
def test_a_stored_memorys_third_person_is_the_speakers_relation(text, expected) -> None:
    """The rules extractor stores "my sister" as "User's sister": still the speaker's."""
    first = extract_entities(text).mentions[0]
    assert (first.name, first.key, first.relation) == expected


# --- mistyping, the speaker themself, calendar words (rough edges) -------------------


def kinds(text: str, speaker_names: Sequence[str] = ()) -> dict[str, str]:
    """{name: type} of the mentions."""
    mentions = extract_entities(text, speaker_names=speaker_names).mentions
    return {m.name: m.type for m in mentions}


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("I took them to Lyon last week.", "Lyon"),
        ("We drove from Denver to Austin.", "Austin"),
        ("The kids stayed near Tekapo.", "Tekapo"),
        ("Return flight from Kansai International Airport to Tokyo Haneda.", "Tokyo Haneda"),
        ("Secondary destination interest: Lake Tekapo, for fishing.", "Lake Tekapo"),
        ("We stayed at the Hemu Grand Hotel.", "Hemu Grand Hotel"),
        ("Pinot regions include Burgundy, Oregon and California.", "Burgundy"),
    ],
)
def test_a_place_by_its_preposition_its_head_word_or_its_list(text, name) -> None:
    assert kinds(text)[name] == "place"


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("I talked to Anna about it.", "Anna"),
        ("I got a letter from Tom.", "Tom"),
        ("We met at Lisa's house.", "Lisa"),
        ("I gave the book to my sister Anna.", "Anna"),
    ],
)
def test_to_or_from_a_person_stays_a_person(text, name) -> None:
    assert kinds(text)[name] == "person"


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("I bought a VW Golf.", "VW Golf"),
        ("I love my VW Golf.", "VW Golf"),
        ("My VW Golf broke down again.", "VW Golf"),
        ("I sold the Toyota Corolla.", "Toyota Corolla"),
        ("She has a Samsung Galaxy.", "Samsung Galaxy"),
    ],
)
def test_a_brand_and_its_model_are_one_product(text, name) -> None:
    assert kinds(text) == {name: "product"}


@pytest.mark.parametrize(
    "text",
    [
        "User is trying the 'Red Light Reset' routine.",
        "Scene 1, Shot 6 is a Medium Shot of the hall.",
        "The Asanify bot failed twice.",
        "Revise Phase 2 of the plan.",
    ],
)
def test_quoted_titles_labels_and_the_things_are_no_people(text) -> None:
    assert names(text, "person") == []


def test_placeholders_and_abstract_nouns_are_no_people() -> None:
    assert names("Hey [Friend's Name], sorry I was away.", "person") == []
    assert names("User is 'Accountable' for Advisor Selection and Fitness.", "person") == []
    assert names("I had dinner with Florence and Lawrence.", "person") == ["Florence", "Lawrence"]


def test_a_shorter_name_of_a_place_said_in_full_is_that_place() -> None:
    got = kinds("Sieben Linden Ecovillage has rooms; contact Sieben Linden directly.")
    assert got == {"Sieben Linden Ecovillage": "place", "Sieben Linden": "place"}


def test_an_abbreviation_with_a_comma_opens_no_sentence() -> None:
    # "Lyon" is no sentence opener, and Paris makes the list places
    assert kinds("We toured cities, e.g., Lyon and Paris.") == {"Lyon": "place", "Paris": "place"}


def test_the_user_and_the_assistant_are_no_entity() -> None:
    assert names("User said the Assistant helped.") == []
    assert names("Assistant suggested a trip.", speaker_names=["Priya", "Assistant"]) == []


def test_the_user_themself_is_no_entity_the_other_speaker_is() -> None:
    got = extract_entities(
        "Caroline went to a support group with Melanie.",
        speaker_names=["Caroline", "Melanie"],
        user_names=["Caroline"],
    )
    assert [(m.name, m.type) for m in got.mentions] == [("Melanie", "person")]
    # the user's named relation is still the user's
    got = extract_entities("Caroline's sister Anna lives in Paris.", user_names=["Caroline"])
    assert [(m.name, m.relation) for m in got.mentions] == [("Anna", "sister"), ("Paris", None)]


def test_speakers_of_a_conversation_say_who_the_user_is() -> None:
    from memstream.schemas.events import Message
    from models.rules.entities import conversation_speakers

    def msg(role: str, name: str | None) -> Message:
        return Message.model_validate({"role": role, "name": name, "content": "hi"})

    two = conversation_speakers([msg("user", "Caroline"), msg("user", "Melanie")])
    assert tuple(two) == ("Caroline", "Melanie") and two.user == ("Caroline",)
    helped = conversation_speakers([msg("user", "Priya"), msg("assistant", "Assistant")])
    assert helped.user == ("Priya",)
    assert conversation_speakers([msg("assistant", "Bot")]).user == ()
    got = extract_entities("Caroline met Melanie.", speaker_names=two)
    assert [m.name for m in got.mentions] == ["Melanie"]


@pytest.mark.parametrize(
    "text",
    [
        "May I ask you something?",
        "We met on Sunday and in June.",
        "June 5th is my birthday.",
        "Sunday was fun. Running helps me.",
        "During Summer we swim.",
        "User's trip is a solo trip in mid-May.",
    ],
)
def test_calendar_words_and_sentence_openers_are_no_people(text) -> None:
    assert names(text, "person") == []

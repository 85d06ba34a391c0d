"""The README's acceptance examples through HTTP against the real stack, as a new user
runs them: the peanut example (add → ingest → recall at the default threshold), the
叫车 (hail a ride) example (add_structured for app_didi888), and a Chinese query
finding an English memory and the other way round."""

from __future__ import annotations

import pytest

from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.integration


def recall(api, user_id: int, query: str, **body) -> dict:
    body.setdefault("timeout_ms", 5000)
    answer = api.post("/memory/v1/recall", json={"user_id": user_id, "query": query, **body})
    data = answer.json()
    assert data["code"] == 0, data
    return data["data"]


def contents(data: dict) -> list[str]:
    return [m["content"] for m in data["memories"]]


def add_structured(api, user_id: int, content: str, app_id: str | None = None) -> str:
    body = {"user_id": user_id, "content": content}
    if app_id:
        body["app_id"] = app_id
    answer = api.post("/memory/v1/add_structured", json=body).json()
    assert answer["code"] == 0, answer
    return answer["data"]["memory_id"]


def test_readme_peanut_example(api, ingest, user_id) -> None:
    added = api.post(
        "/memory/v1/add",
        json={
            "user_id": user_id,
            "app_id": "chat",
            "messages": [{"role": "user", "content": "I am allergic to peanuts.", "msg_id": "m1"}],
        },
    ).json()
    assert added["code"] == 0 and added["data"]["accepted"] is True, added
    task = added["data"]["task_id"]
    wait_for(
        lambda: api.get(f"/memory/v1/tasks/{task}").json()["data"]["status"] == "done",
        what="the add task done",
    )
    data = recall(api, user_id, "what food should I avoid?", scope={"app_id": "chat"})
    assert data["hit"] is True, data
    (first, *_) = data["memories"]
    assert "peanuts" in first["content"] and first["source"]["msg_id"] == "m1"
    assert first["relevance"] >= 0.3


@pytest.fixture
def didi(api, ingest, user_id) -> dict[str, str]:
    texts = ("打车时喜欢安静的车，不要放音乐", "对花生过敏", "住在深圳南山区")
    return {t: add_structured(api, user_id, t, "app_didi888") for t in texts}


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("帮我叫个车", "打车时喜欢安静的车，不要放音乐"),
        ("叫辆出租车去机场", "打车时喜欢安静的车，不要放音乐"),
        ("我不能吃什么", "对花生过敏"),
        ("我住哪里", "住在深圳南山区"),
    ],
)
def test_design_document_taxi_example(api, user_id, didi, query, expected) -> None:
    data = recall(api, user_id, query, scope={"app_id": "app_didi888"})
    assert data["hit"] is True, data
    assert expected in contents(data), (query, data)
    if query in ("帮我叫个车", "我住哪里"):
        assert contents(data)[0] == expected, (query, data)


def test_a_chinese_query_finds_an_english_memory(api, ingest, user_id) -> None:
    for text in ("I am allergic to peanuts.", "My sister lives in Berlin.", "I work as a nurse."):
        add_structured(api, user_id, text)
    data = recall(api, user_id, "我对什么过敏？")
    assert data["hit"] is True and contents(data)[0] == "I am allergic to peanuts.", data
    data = recall(api, user_id, "我姐姐住在哪里？")
    assert contents(data)[0] == "My sister lives in Berlin.", data


def test_an_english_query_finds_a_chinese_memory(api, ingest, user_id) -> None:
    for text in ("对花生过敏", "住在深圳南山区", "我家的猫叫咪咪"):
        add_structured(api, user_id, text)
    data = recall(api, user_id, "where do I live?")
    assert data["hit"] is True and contents(data)[0] == "住在深圳南山区", data
    data = recall(api, user_id, "what is my cat called?")
    assert contents(data)[0] == "我家的猫叫咪咪", data


def _readme_block(heading: str, lang: str) -> str:
    """The first ``lang`` code block under ``heading`` in the README, as a user copies it."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    after = text.split(f"\n{heading}\n", 1)[1]
    return after.split(f"```{lang}\n", 1)[1].split("\n```", 1)[0]


def test_readme_python_client_example(
    settings, stores, runtime, ingest, user_id, tmp_path, monkeypatch, capsys
) -> None:
    """The client example runs as printed against a real API in local mode (no keys, as
    after `make up`), for a user of its own."""
    from tests.helpers.api_server import running_api

    code = _readme_block("## Python client and MCP server", "python")
    assert "user_id=42" in code
    local = settings.model_copy(update={"api_keys_file": tmp_path / "no_keys.json"})
    with running_api(local, stores, runtime) as url:
        monkeypatch.setenv("MEMSTREAM_API_URL", url)
        monkeypatch.delenv("MEMSTREAM_API_KEY", raising=False)
        exec(compile(code.replace("user_id=42", f"user_id={user_id}"), "README", "exec"), {})
    printed = capsys.readouterr().out.splitlines()
    assert printed and "peanuts" in printed[0], printed
    assert float(printed[0].split()[0]) >= 0.3


def test_readme_profile_of_the_taxi_user(api, user_id, didi) -> None:
    """The README's profile example: before any question, app_didi888's profile of the
    叫车 user states each of the three memories once, each item citing what it states."""
    body = {"user_id": user_id, "scope": {"app_id": "app_didi888"}, "max_chars": 500}
    answer = api.post("/memory/v1/profile", json=body).json()
    assert answer["code"] == 0, answer
    items = answer["data"]["items"]
    cited = [m for item in items for m in item["memory_ids"]]
    assert sorted(cited) == sorted(didi.values())
    import unicodedata

    text = unicodedata.normalize("NFKC", "".join(item["text"] for item in items))
    assert all(unicodedata.normalize("NFKC", t) in text for t in didi), text
    assert answer["data"]["chars_used"] == sum(len(item["text"]) for item in items) <= 500

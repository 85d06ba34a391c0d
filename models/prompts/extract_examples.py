"""Few-shot examples of the extraction prompt (docs/architecture.md#fact-extraction).

Their value is in what NOT to store: greetings ("Hi." → []) and general knowledge
("There are branches in trees." → []) next to real facts, in English and Chinese, with
a relative date made absolute, and named, dated turns whose facts name the speaker and
resolve "yesterday" against the turn's own date. Kept apart so the prompt module stays
readable.
"""

from __future__ import annotations

import json

from memstream.schemas.enums import Ownership
from memstream.schemas.json_types import JsonObject, JsonValue


def _example(turns: list[tuple[str, ...]], facts: list[JsonObject]) -> str:
    """Turns as (role, text), or (role, "Name, YYYY-MM-DD", text) for a named, dated one."""
    shown = "\n".join(_turn(i, *turn) for i, turn in enumerate(turns))
    return f"Input:\n{shown}\nOutput: {json.dumps({'facts': facts}, ensure_ascii=False)}"


def _turn(index: int, role: str, *rest: str) -> str:
    label = f"[{index}] {role}" + (f" ({rest[0]})" if len(rest) == 2 else "")
    return f"{label}: {rest[-1]}"


def _fact(text: str, source: int = 0, mem_type: str = "SEMANTIC", **more: JsonValue) -> JsonObject:
    return {"text": text, "source": source, "mem_type": mem_type, **more}


def examples(ownership: Ownership | None) -> str:
    """The few-shot block for one ownership variant (AGENT gets assistant-side shots)."""
    if ownership is Ownership.AGENT:
        shots = [
            _example([("assistant", "Hello! How can I help you today?")], []),
            _example([("assistant", "There are branches in trees.")], []),
            _example(
                [("assistant", "I'm Aria, your travel planner. I always answer in French.")],
                [
                    _fact("Name is Aria, a travel planner"),
                    _fact("Always answers in French", mem_type="PROCEDURAL"),
                ],
            ),
        ]
    else:
        shots = [
            _example([("user", "Hi.")], []),
            _example([("user", "There are branches in trees.")], []),
            _example(
                [("user", "Hi, I am looking for a restaurant in San Francisco.")],
                [_fact("Looking for a restaurant in San Francisco", mem_type="EPISODIC")],
            ),
            _example(
                [("user", "Hi, my name is John. I am a software engineer.")],
                [_fact("Name is John"), _fact("Is a software engineer")],
            ),
            _example(
                [("user", "我叫李雷，我是一名医生。")],
                [_fact("名字是李雷"), _fact("是一名医生")],
            ),
            _example(
                [("user", "2024-05-06", "I'm moving to Shanghai next week.")],
                [
                    _fact(
                        "Moving to Shanghai in the week of 2024-05-13",
                        mem_type="EPISODIC",
                        time_bound=True,
                        expire_at="2024-05-19",
                    )
                ],
            ),
        ]
        named: list[tuple[str, ...]] = [
            ("user", "Priya, 2023-05-08", "I started a pottery class yesterday!"),
        ]
        facts = [_fact("Priya started a pottery class on 2023-05-07", mem_type="EPISODIC")]
        if ownership is None:
            named.append(("assistant", "Tomás, 2023-05-08", "Cool! My sister Ana does pottery."))
            facts.append(_fact("Tomás's sister Ana does pottery", source=1))
        shots.append(_example(named, facts))
        if ownership is None:
            shots.append(
                _example(
                    [
                        ("user", "What is the capital of France?"),
                        ("assistant", "The capital of France is Paris."),
                    ],
                    [],
                )
            )
    return "\n\n".join(shots)

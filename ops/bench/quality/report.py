"""The readable table of ``bench quality`` (stderr); the JSON is the record."""

from __future__ import annotations

from typing import Any

from ops.bench.quality.data import TYPES

COLS = ("recall@1", "recall@5", "recall@10", "hit@10")


def label(name: str) -> str:
    """Column label of a system: memstream's single-channel modes as "ms dense"/"ms lex"."""
    return "ms " + name.removeprefix("memstream_")[:5] if name.startswith("memstream_") else name


def _f(value: Any, width: int = 6) -> str:
    if value is None:
        return "-".rjust(width)
    return f"{value:.3f}".rjust(width) if isinstance(value, float) else str(value).rjust(width)


def _row(label: str, ms: dict, base: dict[str, dict]) -> str:
    cells = [label.ljust(16), _f(ms.get("n"), 4)]
    cells += [_f(ms.get(c)) for c in COLS]
    for b in base.values():
        cells.append(" |" + _f(b.get("recall@10")) + _f(b.get("hit@10")))
    for b in base.values():
        r10 = b.get("recall@10")
        cells.append(_f(round(ms["recall@10"] / r10, 2) if r10 and "recall@10" in ms else None))
    return " ".join(cells)


def table(result: dict[str, Any]) -> str:
    c, ing, ms = result["config"], result["ingest"], result["memstream"]
    raw = {k: v for k, v in result["baselines"].items() if isinstance(v, dict)}
    base = {label(k): v for k, v in {**result.get("modes", {}), **raw}.items()}
    kept, anyk = ms["turns_kept"]["active"], ms["turns_kept"]["any_status"]
    lines = [
        f"bench quality: {c['users']} users x {c['sessions']} sessions (lang {c['lang']}), "
        f"{c['turns']} turns ({c['content_turns']} content), capacity {c['capacity']} "
        f"(per app {c['capacity_per_app']}); embedder {c['embedder']}, llm {c['llm']}",
        f"ingest: {ing['tasks']} sessions in {ing['seconds']} s ({ing['turns_per_s']} turns/s), "
        f"failed {ing['failed_tasks']}, missing {ing['missing_tasks']}; memories "
        f"{ms['memories_by_status']}",
        f"kept: content turns {_f(kept['content'])} (any status {_f(anyk['content'])}), "
        f"chit-chat {_f(kept['chit'])} (any status {_f(anyk['chit'])})",
        f"recalled text: {ms['recalled_chars_mean']} chars per top 10 ("
        + ", ".join(f"{n} {b['recalled_chars_mean']}" for n, b in raw.items())
        + "); "
        f"recall p50 {ms['recall_ms']['p50']} ms, p99 {ms['recall_ms']['p99']} ms",
        "",
        " ".join(
            ["".ljust(21), f"memstream ({c.get('fusion', 'hybrid')})".center(27)]
            + [" |" + n.center(12) for n in base]
            + [" r@10 ratio to"]
        ),
        " ".join(
            ["question".ljust(16), "n".rjust(4)]
            + [h.rjust(6) for h in ("r@1", "r@5", "r@10", "hit10")]
            + [" |" + "r@10".rjust(6) + "hit10".rjust(6) for _ in base]
            + [n[:6].rjust(6) for n in base]
        ),  # fmt: skip
    ]
    for kind in TYPES:
        if kind in ms["by_type"] and kind != "deleted":
            lines.append(
                _row(kind, ms["by_type"][kind], {n: b["by_type"][kind] for n, b in base.items()})
            )
    lines.append(_row("overall", ms["overall"], {n: b["overall"] for n, b in base.items()}))
    for lang, block in ms["by_lang"].items():
        lines.append(_row(f"overall {lang}", block["overall"],
                          {n: b["by_lang"][lang]["overall"] for n, b in base.items()}))  # fmt: skip
    changed = ms["by_type"].get("changed")
    if changed:
        lines.append(
            f"changed: latest first {_f(changed['latest@1'])}, stale ranked above "
            f"{_f(changed['stale_above'])} (" + ", ".join(
                f"{n} {_f(b['by_type']['changed']['latest@1'])}/"
                f"{_f(b['by_type']['changed']['stale_above'])}" for n, b in base.items()) + ")"
        )  # fmt: skip
    deleted = ms["by_type"].get("deleted")
    if deleted:
        gone = ms["deleted"]
        lines.append(f"deleted: {deleted['n']} questions, leak {_f(deleted['leak'])} ("
                     f"{gone['turns_with_memories']} of the turns had memories; "
                     f"{gone['memories']} memories deleted through the API)")  # fmt: skip
    for name, by_lang in result.get("paired", {}).items():
        lines.append(
            f"per question vs {label(name)} (r@10 better/worse/same): "
            + ", ".join(
                f"{lang} {c['better']}/{c['worse']}/{c['same']}" for lang, c in by_lang.items()
            )
        )
    failed = {**ms["failed_recalls"], **ms["at_default_min_relevance"]["failed_recalls"]}
    if failed:
        lines.append(f"failed recalls (code: count): {failed}")
    at = ms["at_default_min_relevance"]
    lines.append(f"at min_relevance {at['min_relevance']}: hit@10 {_f(at['overall'].get('hit@10'))}"
                 f", recall@10 {_f(at['overall'].get('recall@10'))}")  # fmt: skip
    lines += ["", "what an agent pays for (evidence recall at N characters):", budget_table(result)]
    lines += start_table(result)
    return "\n".join(lines)


BUDGET_COLS = (("r@5", "recall@5"), ("r@10", "recall@10"), ("@500", "chars@500"),
               ("@1000", "chars@1000"), ("@2000", "chars@2000"), ("@4000", "chars@4000"),
               ("top10ch", "top10_chars"))  # fmt: skip


def budget_table(result: dict[str, Any]) -> str:
    """What an agent pays for (issue 32): per system and question type, recall@5/10,
    evidence recall at 500 / 1,000 / 2,000 / 4,000 characters and the mean characters
    of the top 10."""
    raw = {k: v for k, v in result["baselines"].items() if isinstance(v, dict)}
    systems = {"memstream": result["memstream"], **raw}
    kinds = [k for k, m in result["memstream"]["by_type"].items() if "recall@10" in m]
    head = ["system".ljust(10), "question".ljust(20), "n".rjust(4)]
    lines = [" ".join(head + [h.rjust(7) for h, _ in BUDGET_COLS])]
    for name, system in systems.items():
        blocks = [("overall", system["overall"])]
        if len(kinds) > 1:
            blocks += [(k, system["by_type"].get(k, {})) for k in kinds]
        for kind, m in blocks:
            cells = [name[:10].ljust(10), kind[:20].ljust(20), _f(m.get("n"), 4)]
            for _, key in BUDGET_COLS:
                v = m.get(key)
                cells.append(_f(round(v) if key == "top10_chars" and v is not None else v, 7))
            lines.append(" ".join(cells))
    return "\n".join(lines)


def start_table(result: dict[str, Any]) -> list[str]:
    """Session-start coverage (issue 44): per system and question type, the share of
    the later questions' evidence covered by the context of 1,000 / 2,000 / 4,000
    characters, and the characters it used at 2,000; the profile's line says why it is
    missing. No lines for a result written before the figure existed."""
    start = result.get("session_start")
    if not start:
        return []
    head = ["context".ljust(16), "question".ljust(20), "n".rjust(4)]
    lines = ["", f"session start, no question yet ({start['contexts']} contexts): share of the "
             "later questions' evidence covered",
             " ".join(head + [f"@{b}".rjust(7) for b in start["budgets"]] + ["used@2000"])]  # fmt: skip
    for name, system in start["systems"].items():
        if system is None:
            lines.append(f"{name}: {start['profile']}")
            continue
        blocks = [("overall", system["overall"])]
        if len(system["by_type"]) > 1:
            blocks += list(system["by_type"].items())
        for kind, m in blocks:
            cells = [name[:16].ljust(16), kind[:20].ljust(20), _f(m.get("n"), 4)]
            cells += [_f(m.get(f"start@{b}"), 7) for b in start["budgets"]]
            if kind == "overall":
                chars = system["used"].get("used@2000")
                cells.append(_f(round(chars) if chars is not None else None, 9))
            lines.append(" ".join(cells))
    listed = start.get("listed") or {}
    if listed.get("n"):
        lines.append(f"listed per context: {listed['memories']} recallable memories, "
                     f"{listed['distinct_weights']} distinct weights")  # fmt: skip
    if start["failed"]:
        lines.append(f"session start: failed calls (what code: count) {start['failed']}")
    return lines


def replay_table(result: dict[str, Any]) -> str:
    """The readable summary of a public-dataset run (``ops.bench.quality.replay``)."""
    c, ing, ms = result["config"], result["ingest"], result["memstream"]
    size = f"limit {c['limit']}" if c.get("limit") else "whole"
    lines = [
        f"bench quality: dataset {c['dataset']} ({size}), {c['users']} users, "
        f"{sum(c['questions'].values())} questions, capacity {c['capacity']} (per app "
        f"{c['capacity_per_app']}); embedder {c['embedder']}, llm {c['llm']}, top {c['depth']}",
        f"ingest: {ing['tasks']} writes, {ing['turns']} turns/memories in {ing['seconds']} s "
        f"({ing['turns_per_s']}/s), failed {ing['failed_tasks']}, missing {ing['missing_tasks']}"
        f"; memories {ms['memories_by_status']}",
        f"recall p50 {ms['recall_ms']['p50']} ms, p99 {ms['recall_ms']['p99']} ms; "
        f"failed recalls {ms['failed_recalls'] or 'none'}",
        "",
        budget_table(result),
        *start_table(result),
    ]
    for name, by_lang in result.get("paired", {}).items():
        lines.append(f"per question vs {name} (r@10 better/worse/same): " + ", ".join(
            f"{lang} {n['better']}/{n['worse']}/{n['same']}" for lang, n in by_lang.items()))  # fmt: skip
    return "\n".join(lines)

"""What a report says about each bench: summary rows, headline figures and charts.

``section(name, result, out_dir)`` returns ``(rows, lines)``: the bench's rows of the
summary table (one per recall phase, one for the others) and its Markdown section, with
its charts written into ``out_dir`` as ``<bench>-<chart>.png``. A bench that failed
holds ``{"error": ...}`` and gets a row saying so. The JSON holds every figure; the
section shows the ones a reader looks at first.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ops.bench import charts

Row = dict[str, str]


def _f(x: Any, digits: int = 1) -> str:
    if x is None:
        return "-"
    return f"{x:.{digits}f}" if isinstance(x, float) else str(x)


def _lat(p50: Any, p95: Any, p99: Any, mx: Any) -> str:
    return " / ".join(_f(v) for v in (p50, p95, p99, mx))


def _row(bench: str, throughput: str, latency: str, cpu: Any, rss: Any, notes: str) -> Row:
    return {"bench": bench, "throughput": throughput, "latency_ms": latency,
            "node_cpu_cores": _f(cpu, 2), "node_rss_mb_max": _f(rss), "notes": notes}  # fmt: skip


def _image(path: Path | None, alt: str) -> list[str]:
    return [f"![{alt}]({path.name})", ""] if path else []


def _recall(r: dict[str, Any], out: Path) -> tuple[list[Row], list[str]]:
    rows, lines = (
        [],
        [
            f"{r['users']} users × {r['memories_per_user']} memories, hot cache "
            f"{r['hot_cache_budget_mb']} MB{' (fitted)' if r['fit_cache'] else ''}, traffic "
            f"{r['traffic']}, embedder {r['embedder']}; latency from each request's due time "
            "(open loop), node = the bench process serving the API.",
            "",
            "| phase | recalls/s | p50 / p95 / p99 / max ms | timeouts | hot hit ratio | CPU cores | RSS MB |",
            "|---|---|---|---|---|---|---|",
        ],
    )
    for group, phases in (("", r["phases"]), ("fitted ", r.get("fit_phases", []))):
        for ph in phases:
            name, node = f"{group}{ph['mode']}", ph.get("node", {})
            lat = _lat(ph["p50_ms"], ph["p95_ms"], ph["p99_ms"], ph["max_ms"])
            lines.append(f"| {name} | {ph['recalls_per_s']} | {lat} | {ph['timeouts']} | "
                         f"{ph['hot_cache']['hit_ratio']} | {_f(node.get('cpu_cores_mean'), 2)} | "
                         f"{_f(node.get('rss_mb_max'))} |")  # fmt: skip
            rows.append(_row(f"recall {name}", f"{ph['recalls_per_s']} recalls/s", lat,
                             node.get("cpu_cores_mean"), node.get("rss_mb_max"),
                             f"timeouts {ph['timeouts']}, hot hit ratio "
                             f"{ph['hot_cache']['hit_ratio']}"))  # fmt: skip
            if "context" in ph:  # the context call at the same rate, after the phase
                ctx = ph["context"]
                clat = _lat(ctx["p50_ms"], ctx["p95_ms"], ctx["p99_ms"], ctx["max_ms"])
                lines.append(f"| context, {name} | {ctx['per_s']} | {clat} | {ctx['timeouts']} | "
                             f"{ctx['hot_cache_hit_ratio']} | | |")  # fmt: skip
                rows.append(_row(f"context {name}", f"{ctx['per_s']} calls/s", clat, None, None,
                                 f"p99 {ctx['p99_over_recall']}x recall's, timeouts "
                                 f"{ctx['timeouts']}"))  # fmt: skip
    lines.append("")
    lines += _image(charts.recall_latency(r, out / "recall-latency.png"), "recall latency vs load")
    return rows, lines


def _ingest(r: dict[str, Any], out: Path) -> tuple[list[Row], list[str]]:
    if "dataset" in r:
        return _ingest_data(r)
    sat, fresh, s = r["node"]["saturation"], r["node"]["freshness"], r["series"]
    lat = _lat(r["freshness_p50_ms"], r["freshness_p95_ms"], r["freshness_p99_ms"],
               r["freshness_max_ms"])  # fmt: skip
    rss = max(sat["rss_mb_max"], fresh["rss_mb_max"])
    rows = [_row("ingest", f"{r['conversations_per_s']} conversations/s, {r['facts_per_s']} "
                 "facts/s", lat, sat["cpu_cores_mean"], rss,
                 f"freshness at {r['freshness_rate_per_s']:g}/s; failed {r['failed_tasks']}, "
                 f"missing {r['missing_tasks']}")]  # fmt: skip
    lines = [
        f"Saturation: {r['conversations']} conversations (2 facts each) produced as fast as "
        f"Kafka takes them: {r['conversations_per_s']} conversations/s, {r['facts_per_s']} "
        f"facts/s over {r['elapsed_s']} s (node CPU {sat['cpu_cores_mean']} cores, RSS max "
        f"{sat['rss_mb_max']} MB). Embedder {r['embedder']}, LLM {r['llm']}.",
        "",
        f"Freshness at {r['freshness_rate_per_s']:g} conversations/s: from the moment an "
        "event is produced (it carries no `ts`, so that is its event time) to its task's "
        "`done`, written once its memories are in ClickHouse, Milvus and the hot cache "
        f"(durable and recallable): p50 / p95 / p99 / max {lat} ms.",
        "",
    ]
    lines += _image(charts.over_time(s["done_per_s"], out / "ingest-throughput.png",
                                     "ingest: conversations done per second (saturation)",
                                     "conversations/s"), "ingest throughput over time")  # fmt: skip
    marks = {k: r[f"freshness_{k}_ms"] for k in ("p50", "p95", "p99")}
    lines += _image(charts.freshness(s["freshness_ms"], marks, out / "ingest-freshness.png"),
                    "ingest freshness distribution")  # fmt: skip
    lines += _image(charts.node(s["node_saturation"], out / "ingest-node.png",
                                "ingest (saturation): node CPU and RSS"), "ingest node")  # fmt: skip
    return rows, lines


def _ingest_data(r: dict[str, Any]) -> tuple[list[Row], list[str]]:
    """``bench ingest --dataset``: rates against the embedder's, and the step table."""
    node, st, bound = r["node"], r["stages"], r["embedder_batch"]
    rows = [_row(f"ingest {r['dataset']}", f"{r['turns_per_s']} turns/s, "
                 f"{r['memories_per_s']} memories/s", "-", node.get("cpu_cores_mean"),
                 node.get("rss_mb_max"), f"embedder alone {bound['per_s']}/s; failed "
                 f"{r['failed_tasks']}, missing {r['missing_tasks']}")]  # fmt: skip
    lines = [
        f"{r['dataset']}: {r['tasks']} conversations, {r['turns']} turns of {r['users']} "
        f"users produced at once, capacity {r['capacity']}, {r['workers']} worker(s): "
        f"{r['turns_per_s']} turns/s, {r['memories_per_s']} memories/s "
        f"({r['memories_per_turn']} a turn) over {r['elapsed_s']} s. The embedder alone on "
        f"the stored texts: {bound['per_s']} passages/s (memories/s is "
        f"x{r['memories_per_s_vs_embedder']} of it). Embedder {r['embedder']}, LLM {r['llm']}.",
        "",
        f"Where the flow's time went ({st['steps_s']} s in its steps over {st['wall_s']} s):",
        "",
        "| step | seconds | share |",
        "|---|---|---|",
    ]
    lines += [f"| {k} | {v} | {st['share_of_steps'].get(k, 0):.1%} |"
              for k, v in st["seconds"].items()]  # fmt: skip
    return rows, [*lines, ""]


def _budget(ms: dict[str, Any], base: dict[str, dict]) -> list[str]:
    """What an agent pays for (issue 32): evidence recall at N characters and the
    characters of the top 10, overall per system; none in reports from before it."""
    if "chars@500" not in ms["overall"]:
        return []
    keys = ("recall@10", "chars@500", "chars@1000", "chars@2000", "chars@4000", "top10_chars")
    lines = ["| system | r@10 | @500 chars | @1,000 | @2,000 | @4,000 | top-10 chars |",
             "|---|---|---|---|---|---|---|"]  # fmt: skip
    for name, system in {"memstream": ms, **base}.items():
        o = system["overall"]
        cells = [_f(o.get(k), 3) if k != "top10_chars" else _f(o.get(k), 0) for k in keys]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines + [""]


def _session_start(start: dict[str, Any] | None) -> list[str]:
    """Session-start coverage (issue 44): the share of the later questions' evidence the
    context of N characters covers, per system; none in reports from before it."""
    if not start:
        return []
    budgets = start["budgets"]
    lines = [f"Session start, no question yet ({start['contexts']} contexts): the share of "
             "the later questions' evidence covered.", "",
             "| context | n | " + " | ".join(f"@{b:,}" for b in budgets)
             + " | chars used @2,000 |", "|---|---|" + "---|" * (len(budgets) + 1)]  # fmt: skip
    for name, system in start["systems"].items():
        if system is None:
            lines.append(f"| {name} | {start['profile']} |" + " |" * (len(budgets) + 1))
            continue
        o = system["overall"]
        cells = [_f(o.get(f"start@{b}"), 3) for b in budgets]
        cells.append(_f(system["used"].get("used@2000"), 0))
        lines.append(f"| {name} | {o['n']} | " + " | ".join(cells) + " |")
    return lines + [""]


def _quality(r: dict[str, Any], out: Path) -> tuple[list[Row], list[str]]:
    ms, c, ing, node = r["memstream"], r["config"], r["ingest"], r.get("node", {})
    base = {k: v for k, v in r["baselines"].items() if isinstance(v, dict)}
    others = {**r.get("modes", {}), **base}
    r10 = ms["overall"].get("recall@10")
    vs = ", ".join(f"{k} {_f(v['overall'].get('recall@10'), 3)}" for k, v in others.items())
    lat = _lat(ms["recall_ms"].get("p50"), None, ms["recall_ms"].get("p99"), None)
    rows = [_row("quality", f"{ing['turns_per_s']} turns/s ingested", lat,
                 node.get("cpu_cores_mean"), node.get("rss_mb_max"),
                 f"recall@10 {_f(r10, 3)} ({vs})")]  # fmt: skip
    lines = [
        (
            f"Dataset {c['dataset']}" + (f" (limit {c['limit']})" if c.get("limit") else "") + ": "
            if c.get("dataset", "generated") != "generated"
            else ""
        )
        + f"{c['users']} users × {c['sessions']} sessions (lang {c['lang']}), {c['turns']} "
        f"turns, capacity {c['capacity']}; embedder {c['embedder']}, llm {c['llm']}. "
        f"Evidence recall@10 overall: memstream {_f(r10, 3)}; {vs}.",
        "",
        "| question type | n | memstream r@10 | " + " | ".join(others) + " |",
        "|---|---|---|" + "---|" * len(others),
    ]
    for kind, m in ms["by_type"].items():
        if "recall@10" in m:
            cells = [_f(o["by_type"].get(kind, {}).get("recall@10"), 3) for o in others.values()]
            lines.append(
                f"| {kind} | {m['n']} | {_f(m['recall@10'], 3)} | " + " | ".join(cells) + " |"
            )
    lines.append("")
    lines += _budget(ms, base)
    lines += _session_start(r.get("session_start"))
    lines += _image(charts.quality_by_type(r, out / "quality-by-type.png"), "quality by type")
    lines += _image(charts.node(r.get("series", {}).get("node", []), out / "quality-node.png",
                                "quality: node CPU and RSS"), "quality node")  # fmt: skip
    return rows, lines


def _warmup_growth(node: dict[str, Any]) -> str:
    before = node.get("load_start")  # absent from reports written before it was recorded
    if before is None:
        return "Node"
    return (
        f"Before the warm-up: RSS {before['rss_mb']} MB, open files {before['open_files']}, "
        f"threads {before['threads']}. After it, node"
    )


def _soak(r: dict[str, Any], out: Path) -> tuple[list[Row], list[str]]:
    node, c, ms = r["node"], r["config"], r["recall_ms"]
    lat = _lat(ms["p50"], ms["p95"], ms["p99"], ms.get("max"))
    bad = {op: {k: n for k, n in codes.items() if k != "0"} for op, codes in r["codes"].items()}
    bad = {op: codes for op, codes in bad.items() if codes}
    rows = [_row("soak", f"{r['requests_per_s']} requests/s", lat, node.get("cpu_cores_mean"),
                 node.get("rss_mb_max"), f"RSS {node['start']['rss_mb']} → {node['end']['rss_mb']}"
                 f" MB ({node['rss_slope_mb_per_min_second_half']} MB/min)")]  # fmt: skip
    lines = [
        f"{c['clients']} clients, {c['users']} users, {c['duration_s']:g} s measured after "
        f"{c['warmup_s']:g} s of warm-up, against a node subprocess with API keys on: "
        f"{r['requests']} requests ({r['requests_per_s']}/s); recall p50 / p95 / p99 / max "
        f"{lat} ms. {_warmup_growth(node)} RSS {node['start']['rss_mb']} → "
        f"{node['end']['rss_mb']} MB (second "
        f"half {node['rss_slope_mb_per_min_second_half']} MB/min), open files "
        f"{node['start']['open_files']} → {node['end']['open_files']}, threads "
        f"{node['start']['threads']} → {node['end']['threads']}, CPU "
        f"{node.get('cpu_cores_mean')} cores. Answers other than 0: {bad or 'none'}.",
        "",
    ]
    lines += _image(charts.over_time(r.get("series", {}).get("requests_per_s", []),
                                     out / "soak-throughput.png",
                                     "soak: requests per second (warm-up included)",
                                     "requests/s"), "soak throughput over time")  # fmt: skip
    lines += _image(charts.node(node["samples"], out / "soak-node.png",
                                "soak: node CPU and RSS (after warm-up)"), "soak node")  # fmt: skip
    lines += _image(charts.heaps(node.get("accounts", []), out / "soak-heaps.png",
                                 "soak: where RSS goes, heap by heap"), "soak heaps")  # fmt: skip
    return rows, lines


SECTIONS = {"recall": _recall, "ingest": _ingest, "quality": _quality, "soak": _soak}


def section(name: str, result: dict[str, Any], out: Path) -> tuple[list[Row], list[str]]:
    if "error" in result:
        return [_row(name, "-", "-", None, None, f"failed: {result['error']}")], [
            f"The bench failed: `{result['error']}`",
            "",
        ]
    return SECTIONS[name](result, out)

"""The PNG charts of a bench report (matplotlib, Agg: no display needed).

One function per chart; each takes the bench's JSON (or the part it plots) and the
file to write, and returns the file, or ``None`` when the run holds nothing to plot
(a bench that failed, a phase list that is empty).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)

PCTS = (("p50_ms", "p50"), ("p95_ms", "p95"), ("p99_ms", "p99"), ("max_ms", "max"))


def _save(fig: Any, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def recall_latency(result: dict[str, Any], path: Path) -> Path | None:
    """Latency percentiles against offered load, one panel per phase group (the
    configured cache, then fitted with ``--compare-fit``). A saturating phase has no
    offered rate: it sits at the rate it reached, marked "max"."""
    groups = [(g, result.get(k) or []) for g, k in (("configured cache", "phases"),
                                                    ("cache fitted", "fit_phases"))]  # fmt: skip
    groups = [(g, phases) for g, phases in groups if phases]
    if not groups:
        return None
    fig, axes = plt.subplots(1, len(groups), figsize=(6.5 * len(groups), 4.2), squeeze=False)
    for ax, (title, phases) in zip(axes[0], groups, strict=True):
        points = sorted(
            ((ph.get("offered_per_s") or ph["recalls_per_s"], ph) for ph in phases),
            key=lambda p: p[0],
        )
        xs = [x for x, _ in points]
        for key, label in PCTS:
            ax.plot(xs, [max(ph[key], 0.01) for _, ph in points], marker="o", label=label)
        for x, ph in points:
            if ph.get("offered_per_s") is None:
                ax.annotate(f"max ({ph['recalls_per_s']:g}/s)", (x, ph["p50_ms"]),
                            textcoords="offset points", xytext=(4, -12), fontsize=8)  # fmt: skip
        ax.set_yscale("log")
        ax.set_xlabel("offered load (recalls/s)")
        ax.set_ylabel("latency (ms, log)")
        ax.set_title(f"recall latency vs load, {title}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    return _save(fig, path)


def over_time(series: list[list[float]], path: Path, title: str, ylabel: str) -> Path | None:
    """A rate (or any value) against seconds since the start: ``[[t_s, value], ...]``."""
    if not series:
        return None
    fig, ax = plt.subplots(figsize=(7, 3.8))
    ax.plot([t for t, _ in series], [v for _, v in series], drawstyle="steps-post")
    ax.set_xlabel("seconds since start")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    return _save(fig, path)


def freshness(latencies_ms: list[float], marks: dict[str, float], path: Path) -> Path | None:
    """The distribution of event → recallable times, with its percentiles marked."""
    if not latencies_ms:
        return None
    fig, ax = plt.subplots(figsize=(7, 3.8))
    ax.hist(latencies_ms, bins=min(50, max(5, len(latencies_ms) // 5)), color="tab:blue")
    for (name, value), color in zip(marks.items(), ("green", "orange", "red", "black"),
                                    strict=False):  # fmt: skip
        ax.axvline(value, color=color, linestyle="--", label=f"{name} {value:g} ms")
    ax.set_xlabel("produce → task done (memories durable and recallable), ms")
    ax.set_ylabel("conversations")
    ax.set_title("ingest freshness")
    ax.legend()
    return _save(fig, path)


def quality_by_type(result: dict[str, Any], path: Path) -> Path | None:
    """recall@10 per question type: memstream next to its single-channel modes and the
    raw-turn baselines (``deleted`` is scored by leaks, not recall: left out)."""
    systems = {"memstream": result["memstream"], **result.get("modes", {}),
               **{k: v for k, v in result.get("baselines", {}).items() if isinstance(v, dict)}}  # fmt: skip
    types = [t for t, m in result["memstream"]["by_type"].items() if "recall@10" in m]
    if not types:
        return None
    fig, ax = plt.subplots(figsize=(max(7, 1.3 * len(types)), 4.2))
    width = 0.8 / len(systems)
    for i, (name, system) in enumerate(systems.items()):
        values = [system["by_type"].get(t, {}).get("recall@10") or 0.0 for t in types]
        ax.bar([x + i * width for x in range(len(types))], values, width, label=name)
    ax.set_xticks([x + 0.4 - width / 2 for x in range(len(types))], types, rotation=20)
    ax.set_ylabel("evidence recall@10")
    ax.set_ylim(0, 1.05)
    ax.set_title("quality per question type")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))  # off the bars
    ax.grid(True, axis="y", alpha=0.3)
    return _save(fig, path)


def node(samples: list[dict[str, float]], path: Path, title: str) -> Path | None:
    """The node's CPU (cores) and RSS (MB) over time: ``{"t_s", "cpu_cores", "rss_mb"}``."""
    if len(samples) < 2:
        return None
    ts = [s["t_s"] for s in samples]
    fig, ax = plt.subplots(figsize=(7, 3.8))
    ax.plot(ts[1:], [s["cpu_cores"] for s in samples[1:]], color="tab:red", marker=".")
    ax.set_xlabel("seconds since start")
    ax.set_ylabel("CPU (cores)", color="tab:red")
    ax.set_ylim(bottom=0)
    rss = ax.twinx()
    rss.plot(ts, [s["rss_mb"] for s in samples], color="tab:blue", marker=".")
    rss.set_ylabel("RSS (MB)", color="tab:blue")
    rss.set_ylim(bottom=0)
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    return _save(fig, path)


def heaps(accounts: list[dict[str, Any]], path: Path, title: str) -> Path | None:
    """Each heap's change (MB) since the first account, beside RSS's, over time: the
    one that moves with RSS is where it goes. ``accounts``: ``bench soak``'s
    ``node.accounts`` (``t_s``, ``rss_mb``, ``heaps_mb``)."""
    if len(accounts) < 2:
        return None
    ts = [a["t_s"] for a in accounts]
    series = {"RSS": [a["rss_mb"] for a in accounts]}
    for key in accounts[0]["heaps_mb"]:
        if all(key in a["heaps_mb"] for a in accounts):
            series[key] = [a["heaps_mb"][key] for a in accounts]
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for label, mb in series.items():
        ax.plot(ts, [v - mb[0] for v in mb], marker=".", label=label,
                linewidth=2.5 if label == "RSS" else 1.2)  # fmt: skip
    ax.set_xlabel("seconds since start")
    ax.set_ylabel("change since start (MB)")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    return _save(fig, path)

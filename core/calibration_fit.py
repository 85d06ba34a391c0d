"""Fitting the knots of ``core.calibration`` from labelled pairs (pure; no I/O).

``ops.bench.quality.calibrate`` builds the pairs from the ``bench quality`` generator and
says why these probabilities: relevance 0 and 0.3 at the 0.05 and 0.3 points of a
logistic fitted on *meaning* pairs, relevance 1 at the 0.975 point of one fitted on a
user's *near* pairs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from core.calibration import CUT, Knots

P_ZERO, P_CUT, P_TOP = 0.05, 0.3, 0.975  # the probabilities the knots sit at
Labelled = tuple[Sequence[float], Sequence[int]]  # (x, related 0/1) per pair


def fit_logistic(x: Sequence[float], y: Sequence[int], iters: int = 50) -> tuple[float, float]:
    """``(a, m)`` of ``P(y=1 | x) = σ(a·(x − m))``, classes weighted to half the mass each."""
    xs, ys = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    pos = ys.mean()
    if not 0.0 < pos < 1.0:
        raise ValueError("need both related and unrelated pairs")
    w = np.where(ys == 1, 0.5 / pos, 0.5 / (1.0 - pos))
    beta = np.array([1.0 / (xs.std() or 1.0), -xs.mean() / (xs.std() or 1.0)])  # slope, intercept
    for _ in range(iters):
        p = 1.0 / (1.0 + np.exp(-(beta[0] * xs + beta[1])))
        r = w * (p - ys)
        h = w * p * (1.0 - p)
        grad = np.array([(r * xs).sum(), r.sum()])
        hess = np.array([[(h * xs * xs).sum(), (h * xs).sum()], [(h * xs).sum(), h.sum()]])
        step = np.linalg.solve(hess + 1e-9 * np.eye(2), grad)
        beta -= step
        if np.abs(step).max() < 1e-10:
            break
    return float(beta[0]), float(-beta[1] / beta[0])


def logistic_point(a: float, m: float, p: float) -> float:
    """The x at which ``σ(a·(x − m)) = p``."""
    return m + math.log(p / (1.0 - p)) / a


def fit_knots(meaning: Labelled, near: Labelled) -> Knots:
    """``lo``/``cut``: the ``P_ZERO``/``P_CUT`` points of the fit on ``meaning`` pairs;
    ``hi``: the ``P_TOP`` point of the fit on ``near`` pairs (or, should that not lie above
    ``cut``, where the lower segment's slope would reach 1). Each pair set is (x, related)."""
    a, m = fit_logistic(*meaning)
    lo, cut = logistic_point(a, m, P_ZERO), logistic_point(a, m, P_CUT)
    hi = logistic_point(*fit_logistic(*near), P_TOP)
    if hi <= cut:
        hi = cut + (cut - lo) * (1.0 - CUT) / CUT
    return Knots(round(lo, 4), round(cut, 4), round(hi, 4))

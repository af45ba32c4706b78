r"""Problem instances for the full-bandit experiments (Kuroki et al. 2020, Sec. 5).

Synthetic instances (Sec. 5, "Synthetic datasets")
--------------------------------------------------
The paper draws the top-``k`` means uniformly from an interval, puts the :math:`(k+1)`-th mean
exactly :math:`\Delta` below the smallest top mean, and draws the rest uniformly below that, so
the best super-arm beats every other by at least :math:`\Delta` (swapping one member for the
:math:`(k+1)`-th arm loses exactly :math:`\theta_{(k)} - \theta_{(k+1)} = \Delta`). The interval
and the two gaps were lost from the extracted text; :func:`synthetic_instance` takes them as
arguments, and :data:`SYNTHETIC` fixes the values the benchmarks use (n = 10, k = 5, top means in
[0.5, 1], small gap 0.1, large gap 0.4, the rest in [0, :math:`\theta_{(k)}-\Delta`]).

Crowdsourcing-sized instances (Sec. 5, Table 2; data of Li et al.)
------------------------------------------------------------------
The six real datasets are not available; :func:`crowdsourcing_instance` builds a deterministic
accuracy profile per dataset from what Table 2 reports: the number of workers ``n`` (the arms),
the average accuracy :math:`\bar a` and the best accuracy :math:`a_{\max}` (the number of tasks
is kept as metadata). Chosen here (not in the paper): ``k = 10``, the top-``k`` accuracies evenly
spaced from :math:`a_{\max}` down to :math:`a_{\max} - s` (spread ``s = 0.2``), a gap of at least
:math:`\Delta = 0.1` between the ``k``-th and the :math:`(k+1)`-th worker (``Instance.gap`` is the exact one), and the
other
:math:`n-k` workers on the profile :math:`h\,u_i^p`, :math:`u_i = (i + \tfrac12)/(n-k)`,
:math:`h = a_{\max} - s - \Delta`, with the exponent :math:`p > 0` solved by bisection so that the
mean over all ``n`` workers equals :math:`\bar a` exactly:

.. math:: \frac{1}{n-k}\sum_i h\,u_i^p = m_r := \frac{n\bar a - \sum_{\text{top}} a}{n-k}.

The left side decreases from :math:`h` (at :math:`p = 0`) to 0 as :math:`p \to\infty`, so a
solution exists iff :math:`0 < m_r < h`; otherwise a ``ValueError`` names the parameter to change.
Every accuracy lies in :math:`[0, a_{\max}]`, the optimal team is unique, and its gap to every
other team is at least :math:`\Delta`.
"""

from __future__ import annotations

import math
import numbers
from typing import NamedTuple

import numpy as np

from pmcbandit._validation import param_message

__all__ = ["Instance", "synthetic_instance", "crowdsourcing_instance", "CROWDSOURCING", "SYNTHETIC",
           "best_super_arm", "super_arm_gap"]


class Instance(NamedTuple):
    """A full-bandit instance: ``theta`` (n,) single-arm means, ``k``, ``name``, ``gap`` (the
    guaranteed gap :math:`\\theta(M^*) - \\max_{M\\ne M^*}\\theta(M)`) and ``meta`` (dict).
    """

    theta: np.ndarray
    k: int
    name: str
    gap: float
    meta: dict


#: Table 2 of Kuroki et al. (2020): tasks, workers, average and best accuracy of each dataset.
CROWDSOURCING = {
    "IT": dict(tasks=25, workers=36, average=0.54, best=0.84),
    "Medicine": dict(tasks=36, workers=45, average=0.48, best=0.92),
    "Chinese": dict(tasks=24, workers=50, average=0.37, best=0.79),
    "Pokemon": dict(tasks=20, workers=55, average=0.28, best=1.00),
    "English": dict(tasks=30, workers=63, average=0.26, best=0.70),
    "Science": dict(tasks=20, workers=111, average=0.29, best=0.85),
}

#: The synthetic settings the benchmarks use (module docstring): n, k, top interval, gaps.
SYNTHETIC = dict(n=10, k=5, top=(0.5, 1.0), small_gap=0.1, large_gap=0.4)


def _check_int(name, value, lo, door):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < lo:
        raise ValueError(param_message(name, door, f"an int >= {lo}", value))
    return int(value)


def _check_pos(name, value, door, allow_zero=False):
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or value < 0 or (value == 0 and not allow_zero):
        raise ValueError(param_message(name, door, "a finite real number " + (">= 0" if allow_zero else "> 0"), value))
    return float(value)


def best_super_arm(theta, k: int) -> np.ndarray:
    """Indices of the ``k`` largest means, largest first (ties: lower index first)."""
    return np.argsort(-np.asarray(theta, dtype=np.float64), kind="stable")[:k]


def super_arm_gap(theta, k: int) -> float:
    r""":math:`\theta(M^*) - \max_{M \ne M^*}\theta(M) = \theta_{(k)} - \theta_{(k+1)}` (order statistics,
    largest first): the best other super-arm swaps the weakest member for the best non-member.
    """
    s = np.sort(np.asarray(theta, dtype=np.float64))[::-1]
    return float(s[k - 1] - s[k])


def synthetic_instance(n: int, k: int, gap: float, rng: np.random.Generator, *, top=(0.5, 1.0),
                       low: float = 0.0) -> Instance:
    r"""Paper Sec. 5 synthetic instance with super-arm gap exactly ``gap``.

    Top-``k`` means :math:`\sim U[\text{top}_0, \text{top}_1]`, :math:`\theta_{(k+1)} = \theta_{(k)} - \Delta`,
    the remaining :math:`n-k-1` means :math:`\sim U[\text{low}, \theta_{(k)} - \Delta)`; the arms are then
    randomly permuted (so the best set is not ``0..k-1``).

    Parameters
    ----------
    n, k : int
        ``2 <= k < n``.
    gap : float
        :math:`\Delta > 0`; must leave room: :math:`\text{top}_0 - \Delta > \text{low}`.
    rng : numpy.random.Generator
    top : tuple of float
        Interval of the top-``k`` means.
    low : float
        Lower end of the other means.

    Examples
    --------
    >>> inst = synthetic_instance(10, 5, 0.1, np.random.default_rng(0))
    >>> round(super_arm_gap(inst.theta, 5), 12)
    0.1
    """
    door = "synthetic_instance"
    n = _check_int("n", n, 3, door)
    k = _check_int("k", k, 2, door)
    if k >= n:
        raise ValueError(param_message("k", door, f"an int < n = {n}", k))
    gap = _check_pos("gap", gap, door)
    if not isinstance(rng, np.random.Generator):
        raise TypeError(param_message("rng", door, "a numpy.random.Generator", rng))
    lo_top, hi_top = (float(v) for v in top)
    if not (math.isfinite(lo_top) and math.isfinite(hi_top) and lo_top <= hi_top):
        raise ValueError(param_message("top", door, "a finite interval (lo, hi) with lo <= hi", top))
    if not (math.isfinite(low) and low < lo_top - gap):
        raise ValueError(param_message("gap", door, f"below top[0] - low = {lo_top - low!r}", gap))
    tops = rng.uniform(lo_top, hi_top, k)
    kth = tops.min()
    second = kth - gap
    rest = rng.uniform(low, second, n - k - 1)
    theta = np.concatenate([tops, [second], rest])
    theta = theta[rng.permutation(n)]
    return Instance(theta, k, f"synthetic(n={n}, k={k}, gap={gap:g})", gap,
                    dict(top=(lo_top, hi_top), low=float(low)))


def _profile_mean(p, m):
    u = (np.arange(m) + 0.5) / m
    return float(np.mean(u ** p))


def crowdsourcing_instance(name: str, k: int = 10, *, gap: float = 0.1, spread: float = 0.2) -> Instance:
    r"""A synthetic stand-in for one of the paper's six crowdsourcing datasets (module docstring).

    Parameters
    ----------
    name : str
        A key of :data:`CROWDSOURCING` (``"IT"``, ``"Medicine"``, ``"Chinese"``, ``"Pokemon"``,
        ``"English"``, ``"Science"``).
    k : int
        Team size, ``2 <= k < workers``.
    gap : float
        :math:`\Delta`: accuracy of the ``k``-th best minus the :math:`(k+1)`-th best worker.
    spread : float
        Range of the top-``k`` accuracies, :math:`a_{\max}` down to :math:`a_{\max} - s`.

    Returns
    -------
    Instance
        Deterministic (no randomness); ``theta[0]`` is the best worker, ``theta[:k]`` the optimal team.

    Examples
    --------
    >>> inst = crowdsourcing_instance("IT")
    >>> inst.theta.shape, round(float(inst.theta.mean()), 12), float(inst.theta.max())
    ((36,), 0.54, 0.84)
    """
    door = "crowdsourcing_instance"
    if name not in CROWDSOURCING:
        raise ValueError(param_message("name", door, f"one of {tuple(CROWDSOURCING)}", name))
    spec = CROWDSOURCING[name]
    n, avg, best = spec["workers"], spec["average"], spec["best"]
    k = _check_int("k", k, 2, door)
    if k >= n:
        raise ValueError(param_message("k", door, f"an int < the number of workers {n}", k))
    gap = _check_pos("gap", gap, door)
    spread = _check_pos("spread", spread, door, allow_zero=True)
    top = np.linspace(best, best - spread, k)
    h = best - spread - gap
    m = n - k
    m_r = (n * avg - top.sum()) / m
    if h <= 0:
        raise ValueError(param_message("gap", door, f"below best - spread = {best - spread!r}", gap))
    if not 0.0 < m_r < h:
        raise ValueError(param_message("spread", door, "such that the other workers' required mean lies in "
                                       f"(0, best - spread - gap) (it is {m_r!r})", spread))
    # _profile_mean decreases in p from 1 (p = 0) to ~0: bisect on log p for mean = m_r / h
    target = m_r / h
    lo, hi = 1e-9, 1.0
    while _profile_mean(hi, m) > target:
        hi *= 2.0
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        if _profile_mean(mid, m) > target:
            lo = mid
        else:
            hi = mid
    p = math.sqrt(lo * hi)
    u = (np.arange(m) + 0.5) / m
    rest = np.sort(h * u ** p)[::-1]
    # the bisection leaves ~1e-15 of error in the mean; put it on the (never top) lowest worker
    rest[-1] += n * avg - top.sum() - rest.sum()
    theta = np.concatenate([top, rest])
    return Instance(theta, k, name, float(top[-1] - rest[0]),
                    dict(spec, k=k, spread=spread, exponent=p))

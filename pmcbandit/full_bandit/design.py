r"""Static allocations over super-arms: a support of polynomially many k-sets and target shares.

Kuroki et al. (2020), Sec. 4 and App. D: a static algorithm pulls super-arms from a fixed
allocation :math:`\lambda \in \Delta(\mathcal M)` whose support :math:`\mathrm{supp}(\lambda)` has
polynomial size and whose design :math:`A(\lambda) = \sum_M \lambda_M \chi_M \chi_M^\top` has full
rank (otherwise :math:`\hat\theta_t = A_t^{-1} b_t` does not exist). :class:`Allocation` is the
interface every algorithm of :mod:`pmcbandit.full_bandit` takes; ``"uniform"`` is built here,
``"g"`` (G-allocation, App. D) by :func:`pmcbandit.full_bandit.g_allocation.g_allocation`, on top of this
module; :mod:`~pmcbandit.full_bandit.allocation` turns a name into either.

Uniform allocation
------------------
Equal weights on a fixed support of polynomial size (``design`` of :func:`uniform_allocation`):

* ``"random"`` (default): all :math:`\binom nk` sets when there are at most :math:`4n`, otherwise
  :math:`4n` distinct k-sets drawn once from a Generator seeded by ``(n, k)`` (a fixed design table:
  the same support in every run and process, no user randomness involved). Its design is close to
  the balanced one :math:`A \propto \alpha I + \beta J`, which the stopping rules need: the largest
  swap variance :math:`\max_{i,j}\|e_i - e_j\|^2_{A^{-1}}` per pull stays within a small factor of
  the balanced design's, while the cyclic windows below, whose circulant spectrum
  :math:`|\sum_{j<k}\omega^{jl}|` has near-zeros, inflate it by one to two orders of magnitude
  (``benchmarks/results/bench_full_bandit_crowd.md`` prints the G-values of the designs used).
* ``"cyclic"``: the cyclic windows :math:`W_i = \{i, \dots, i+k-1\} \bmod n`, :math:`i < n`, whose
  incidence matrix is circulant with eigenvalues :math:`\sum_{j<k} \omega^{jl}`
  (:math:`\omega = e^{2\pi i/n}`); one vanishes exactly when :math:`n \mid kl` for some
  :math:`0 < l < n`, i.e. when :math:`\gcd(n, k) > 1` (e.g. :math:`n = 10, k = 5` has rank 6).

Either way the rank is checked (Gram–Schmidt, :func:`support_rank`); while it is below :math:`n`,
sets from a fixed list (:math:`\{0, \dots, k-2\} \cup \{j\}`, then windows with one member
shifted) are added when they raise it. A support that still has rank below :math:`n` raises.

Tracking
--------
Round :math:`t` (0-based, :math:`t` pulls made) pulls the row
:math:`\arg\min_r\, c_r - \lambda_r (t + 1)` (ties: the lower index), where :math:`c_r` counts
its pulls so far: deterministic, and :math:`|c_r - \lambda_r t| \le m` for every row at every
round (a standard tracking bound), so the empirical design follows :math:`A(\lambda)`.
Every row of positive weight is pulled once within the first rounds
(:func:`rounds_to_full_rank`), after which :math:`A_t` is invertible.
"""

from __future__ import annotations

import itertools
import math
import numbers
from typing import NamedTuple

import numba
import numpy as np

from pmcbandit._validation import param_message

__all__ = ["Allocation", "uniform_allocation", "check_allocation", "check_nk", "support_rank", "track",
           "rounds_to_full_rank", "ALLOCATION_NAMES"]

#: Allocation names :func:`~pmcbandit.full_bandit.allocation.resolve_allocation` understands.
ALLOCATION_NAMES = ("uniform", "g")


class Allocation(NamedTuple):
    """A static allocation: ``support`` (m, n) bool, each row a super-arm with exactly ``k`` ones;
    ``weights`` (m,) float, non-negative, summing to 1 (the target share of pulls of each row);
    ``name`` (``"uniform"``, ``"g"``, ...).
    """

    support: np.ndarray
    weights: np.ndarray
    name: str


def check_nk(n, k, door: str) -> tuple[int, int]:
    """Validate ``n`` (int >= 3) and ``k`` (int, ``2 <= k < n``; the paper assumes k >= 2, Sec. 4)."""
    if isinstance(n, bool) or not isinstance(n, numbers.Integral):
        raise TypeError(param_message("n", door, "an int", n))
    if isinstance(k, bool) or not isinstance(k, numbers.Integral):
        raise TypeError(param_message("k", door, "an int", k))
    if n < 3:
        raise ValueError(param_message("n", door, "an int >= 3", n))
    if k < 2:
        raise ValueError(param_message("k", door, "an int >= 2 (k = 1 is best-arm identification)", k))
    if k >= n:
        raise ValueError(param_message("k", door, f"an int < n = {int(n)}", k))
    return int(n), int(k)


def _rows_to_mask(rows, n):
    out = np.zeros((len(rows), n), dtype=bool)
    for r, members in enumerate(rows):
        out[r, list(members)] = True
    return out


@numba.njit(cache=True)
def _orthogonalise_into(basis, rank, members, k):
    # residual of the indicator of `members` against basis[:rank] (two Gram-Schmidt passes); when it is
    # not numerically zero it becomes basis[rank] and the function returns 1 (the rank grew), else 0
    n = basis.shape[1]
    res = np.zeros(n)
    for a in range(members.shape[0]):
        res[members[a]] = 1.0
    for _ in range(2):
        for r in range(rank):
            c = 0.0
            for j in range(n):
                c += basis[r, j] * res[j]
            for j in range(n):
                res[j] -= c * basis[r, j]
    norm = np.sqrt(np.sum(res * res))
    if norm <= 1e-9 * np.sqrt(k):
        return 0
    basis[rank, :] = res / norm
    return 1


def support_rank(support: np.ndarray) -> int:
    """Rank of a 0/1 support matrix by Gram-Schmidt over its rows (tolerance 1e-9 relative to a row's
    norm; LAPACK's SVD is avoided because it is slow under thread contention for n ~ 100).
    """
    support = np.asarray(support, dtype=bool)
    n = support.shape[1]
    basis = np.zeros((n, n))
    rank = 0
    for row in support:
        if rank == n:
            break
        members = np.flatnonzero(row).astype(np.int64)
        rank += _orthogonalise_into(basis, rank, members, max(members.shape[0], 1))
    return rank


def uniform_allocation(n: int, k: int, *, design: str = "random") -> Allocation:
    """Equal weights on a full-rank support of polynomial size (module docstring): ``design="random"``
    (at most ``4 n`` rows, plus rank repairs) or ``"cyclic"`` (``n`` windows, plus rank repairs).

    >>> a = uniform_allocation(10, 5)
    >>> int(np.linalg.matrix_rank(a.support.astype(float))), a.support.shape, bool(np.allclose(a.weights.sum(), 1))
    (10, (40, 10), True)
    >>> uniform_allocation(10, 5, design="cyclic").support.shape  # the 10 windows have rank 6
    (14, 10)
    """
    n, k = check_nk(n, k, "uniform_allocation")
    if design == "random":
        count = math.comb(n, k)
        if count <= 4 * n:
            first = list(itertools.combinations(range(n), k))
        else:
            gen = np.random.default_rng([n, k, 14])
            chosen = set()
            while len(chosen) < 4 * n:
                chosen.add(tuple(sorted(gen.choice(n, size=k, replace=False).tolist())))
            first = sorted(chosen)
    elif design == "cyclic":
        first = [tuple((i + j) % n for j in range(k)) for i in range(n)]
    else:
        raise ValueError(param_message("design", "uniform_allocation", "one of ('random', 'cyclic')", design))
    repairs = [tuple(range(k - 1)) + (j,) for j in range(k - 1, n)]
    repairs += [tuple((i + j) % n for j in range(k - 1)) + ((i + k) % n,) for i in range(n)]
    rows = []
    basis = np.zeros((n, n))  # orthonormal basis of the span so far (Gram-Schmidt), first `rank` rows
    rank = 0

    def add(cand, always):
        nonlocal rank
        grows = _orthogonalise_into(basis, rank, np.asarray(cand, dtype=np.int64), k)
        rank += grows
        if grows or always:
            rows.append(tuple(sorted(cand)))

    for cand in first:
        add(cand, True)
    for cand in repairs:
        if rank == n:
            break
        if tuple(sorted(cand)) not in rows:
            add(cand, False)
    if rank < n:  # never observed for 3 <= n < 60 (every k, both designs); kept as a guard
        raise ValueError(param_message("k", "uniform_allocation", "such that a full-rank support exists", k))
    support = _rows_to_mask(rows, n)
    return Allocation(support, np.full(len(rows), 1.0 / len(rows)), "uniform")


def check_allocation(allocation, n: int, k: int, door: str) -> Allocation:
    """Validate an :class:`Allocation` for ``n`` arms and super-arms of size ``k``.

    Rows of zero weight are dropped (they are never pulled) and a row repeated is kept once with the
    sum of its weights (the same super-arm, one target share); the remaining support must have rank
    ``n`` (a ``ValueError`` naming ``'allocation'`` otherwise: :math:`A_t` would stay singular).
    Weights are renormalised to sum to exactly 1 after checking they sum to 1 within 1e-8.
    """
    if not isinstance(allocation, Allocation):
        raise TypeError(param_message("allocation", door, "an Allocation or one of " + str(ALLOCATION_NAMES),
                                      allocation))
    support = np.asarray(allocation.support)
    weights = np.asarray(allocation.weights, dtype=np.float64)
    if support.ndim != 2 or support.shape[1] != n or support.shape[0] < 1:
        raise ValueError(param_message("allocation", door, f"an Allocation whose support has shape (m, {n})",
                              getattr(support, "shape", support)))
    if support.dtype != bool:
        if not np.all((support == 0) | (support == 1)):
            raise ValueError(param_message("allocation", door, "an Allocation with a 0/1 support", allocation.name))
        support = support.astype(bool)
    sizes = support.sum(axis=1)
    if np.any(sizes != k):
        raise ValueError(param_message("allocation", door, f"an Allocation whose rows have exactly k = {k} ones",
                              f"row sizes {sorted(set(sizes.tolist()))}"))
    if weights.shape != (support.shape[0],) or not np.all(np.isfinite(weights)) or np.any(weights < 0):
        raise ValueError(param_message("allocation", door,
                                       "an Allocation with finite non-negative weights, one per row",
                              weights))
    if abs(weights.sum() - 1.0) > 1e-8:
        raise ValueError(param_message("allocation", door, "an Allocation whose weights sum to 1",
                                       float(weights.sum())))
    keep = weights > 0
    support, weights = support[keep], weights[keep]
    if len({row.tobytes() for row in support}) < support.shape[0]:
        unique, first, inverse = np.unique(support, axis=0, return_index=True, return_inverse=True)
        order = np.argsort(first)  # keep the rows in their first order
        merged = np.bincount(inverse.ravel(), weights=weights, minlength=unique.shape[0])
        support, weights = unique[order], merged[order]
    rank = support_rank(support)
    if rank < n:
        raise ValueError(param_message("allocation", door, f"an Allocation whose support has full rank n = {n} "
                              "(the least-squares estimate needs an invertible design)", f"rank {rank}"))
    return Allocation(np.ascontiguousarray(support), weights / weights.sum(), str(allocation.name))


@numba.njit(cache=True)
def track(counts, weights, t):
    """Row to pull at round ``t`` (``t`` pulls made): :math:`\\arg\\min_r c_r - \\lambda_r (t+1)`."""
    best = 0
    best_v = np.inf
    for r in range(counts.shape[0]):
        v = counts[r] - weights[r] * (t + 1.0)
        if v < best_v:
            best_v = v
            best = r
    return best


def rounds_to_full_rank(weights: np.ndarray) -> int:
    """Rounds after which :func:`track` has pulled every row at least once (simulated exactly)."""
    counts = np.zeros(weights.shape[0], dtype=np.int64)
    t = 0
    while np.any(counts == 0):
        counts[track(counts, weights, t)] += 1
        t += 1
    return t

r"""G-allocation: the convex relaxation of the G-optimal design over super-arms, and its rounding.

Kuroki et al. (2020), Sec. 4 and App. D, after Soare, Lazaric & Munos (2014): a static algorithm
pulls super-arms in proportions :math:`\lambda \in \Delta(\mathcal M)`; with
:math:`A(\lambda) = \sum_M \lambda_M \chi_M\chi_M^\top` the G-allocation is

.. math:: \lambda^G = \arg\min_\lambda\, G(\lambda), \qquad
          G(\lambda) = \max_{M \in \mathcal M} \chi_M^\top A(\lambda)^{-1}\chi_M ,

the allocation that makes the widest confidence interval :math:`C_t\|\chi_M\|_{A_t^{-1}}` (with
:math:`A_t \approx tA(\lambda)`) as small as possible. The paper's App. D solves the continuous
relaxation "by the projected gradient, multiplicative or interior point algorithm" and rounds it
(efficient apportionment, Pukelsheim & Rieder 1992); the formulas were lost in extraction and are
restated here.

Kiefer–Wolfowitz (1960) equivalence
-----------------------------------
For any :math:`\lambda` with :math:`A(\lambda)` invertible,
:math:`\sum_M \lambda_M \chi_M^\top A^{-1}\chi_M = \operatorname{tr}(A^{-1}A) = n`, so
:math:`G(\lambda) \ge n`; and :math:`\lambda` maximises :math:`\log\det A(\lambda)` (D-optimal) iff
:math:`G(\lambda) = n` (G-optimal). Hence the G-optimal value over all size-``k`` sets is exactly
:math:`n` (attained, e.g., by the uniform distribution on all :math:`\binom nk` sets, whose design
is :math:`\alpha I + \beta J`), and we solve the concave D-problem instead.

Algorithm (Fedorov–Wynn Frank–Wolfe with column generation, plus multiplicative updates)
---------------------------------------------------------------------------------------
:math:`f(\lambda) = \log\det A(\lambda)` has :math:`\partial f/\partial\lambda_M = g_M :=
\chi_M^\top A^{-1}\chi_M`. Each iteration

1. runs a few multiplicative updates :math:`\lambda_r \leftarrow \lambda_r g_r / n` on the current
   support (Silvey, Titterington & Torsney 1978; they keep :math:`\sum\lambda = 1` because
   :math:`\sum_r\lambda_r g_r = n`, and never decrease :math:`f`);
2. calls the linear-maximisation oracle :math:`M^+ = \arg\max_M g_M` over *all* super-arms: exact
   enumeration when :math:`\binom nk \le` ``max_enumerate``, else Alg. 1 of the paper (QP via
   densest-k-subgraph with greedy peeling, :func:`~pmcbandit.full_bandit.dks.qp_greedy`) and the
   best support row;
3. takes the Fedorov–Wynn step :math:`\lambda \leftarrow (1-\alpha)\lambda + \alpha e_{M^+}`,
   :math:`\alpha = (g^+/n - 1)/(g^+ - 1)` (the exact line maximiser of :math:`f`), adding
   :math:`M^+` to the support if new — the support grows by at most one row per iteration, so it
   stays of polynomial size (at most the start's rows plus ``max_iter``).

Optimality certificate. By concavity of :math:`f`, :math:`f(\lambda^D) - f(\lambda) \le
\max_M g_M - n` (the Frank–Wolfe duality gap), and :math:`G(\lambda) = \max_M g_M`. The loop stops
when a *certified upper bound* :math:`U \ge G(\lambda)` satisfies :math:`U \le n(1 + \text{tol})`:
:math:`U` is the exact maximum when enumerated, else the row bound
:func:`~pmcbandit.full_bandit.dks.row_bound` (never below the maximum). Then
:math:`G(\lambda) \le (1+\text{tol})\min_\mu G(\mu)`.

Rounding (App. D)
-----------------
The continuous :math:`\lambda` is turned into a polynomial-size support by dropping rows of weight
below ``prune / m`` (``m`` rows), keeping the rest only if they still have rank ``n``, and
renormalising (the dropped mass is below ``prune``, so the G-value can rise slightly above the
certified one: :func:`g_value` evaluates the returned allocation; ``prune=0`` keeps every row); the
returned :class:`~pmcbandit.full_bandit.design.Allocation` is followed by
the deterministic tracking rule of :mod:`~pmcbandit.full_bandit.design`. For a fixed budget of
``N`` pulls, :func:`efficient_apportionment` gives the integer counts of App. D.
"""

from __future__ import annotations

import math
import numbers
import warnings

import numpy as np

from pmcbandit._validation import param_message
from pmcbandit.exceptions import SettingsWarning
from pmcbandit.full_bandit.design import Allocation, check_allocation, check_nk, uniform_allocation
from pmcbandit.full_bandit.dks import argmax_quadratic, qp_greedy, row_bound

__all__ = ["g_allocation", "g_value", "efficient_apportionment", "MAX_ENUMERATE"]

#: Largest C(n, k) for which the oracle and :func:`g_value` enumerate every super-arm.
MAX_ENUMERATE = 20_000


def _combos(n, k):
    import itertools

    return np.array(list(itertools.combinations(range(n), k)), dtype=np.int64).reshape(-1, k)


def _design_inverse(rows, lam):
    A = (rows.T * lam) @ rows
    L = np.linalg.cholesky(A)
    Linv = np.linalg.solve(L, np.eye(A.shape[0]))
    return Linv.T @ Linv


def _row_norms(rows, W):
    return ((rows @ W) * rows).sum(axis=1)


def g_value(allocation: Allocation, k: int | None = None, *, max_enumerate: int = MAX_ENUMERATE) -> tuple[float, float]:
    r"""Lower and upper bounds on :math:`G(\lambda) = \max_M \chi_M^\top A(\lambda)^{-1}\chi_M` over all
    size-``k`` super-arms.

    Equal (the exact value) when :math:`\binom nk \le` ``max_enumerate``; otherwise the lower bound is
    the best of Alg. 1 (greedy peeling) and the support rows, the upper bound the row bound
    (:func:`~pmcbandit.full_bandit.dks.row_bound`). :math:`G(\lambda) \ge n` always (Kiefer–Wolfowitz).

    >>> lo, hi = g_value(uniform_allocation(6, 3))
    >>> lo == hi and lo >= 6
    True
    """
    support = np.asarray(allocation.support)
    n = support.shape[1]
    if k is None:
        k = int(support[0].sum())
    alloc = check_allocation(allocation, n, k, "g_value")
    rows = alloc.support.astype(np.float64)
    W = _design_inverse(rows, alloc.weights)
    if math.comb(n, k) <= max_enumerate:
        _, best = argmax_quadratic(W, _combos(n, k))
        return float(best), float(best)
    _, greedy = qp_greedy(W, k)
    lower = max(float(greedy), float(_row_norms(rows, W).max()))
    return lower, max(lower, float(row_bound(W, k)))


def g_allocation(n: int, k: int, *, support=None, max_iter: int = 1000, tol: float = 1e-2, inner: int = 3,
                 prune: float = 1e-3, max_enumerate: int = MAX_ENUMERATE) -> Allocation:
    r"""G-allocation (module docstring): approximately G-optimal proportions over size-``k`` super-arms.

    Parameters
    ----------
    n, k : int
        Number of single arms and super-arm size, ``2 <= k < n``.
    support : array_like of bool, shape (m, n), optional
        Restrict the design to these super-arms (each row exactly ``k`` ones, rank ``n``): the oracle
        then maximises over the rows only, and the certificate is relative to that restricted
        problem. Default: column generation over all :math:`\binom nk` super-arms, started from
        :func:`~pmcbandit.full_bandit.design.uniform_allocation`'s support.
    max_iter : int
        Frank–Wolfe iterations (each adds at most one row).
    tol : float
        Stop once a certified :math:`G(\lambda) \le n(1 + \text{tol})`, ``tol > 0``.
    inner : int
        Multiplicative updates per iteration (``>= 0``).
    prune : float
        Rows of weight below ``prune / m`` are dropped in the rounding if rank ``n`` survives;
        ``0 <= prune < 1``.
    max_enumerate : int
        Exact oracle (enumeration) while :math:`\binom nk \le` ``max_enumerate``; greedy Alg. 1 and the
        row bound above.

    Returns
    -------
    Allocation
        ``name="g"``. A :class:`~pmcbandit.exceptions.SettingsWarning` says when ``max_iter`` ran out before the
        certificate held
        (the allocation is still valid, its G-value then within the warned bound).

    References
    ----------
    Kuroki et al. (2020), App. D; Soare, Lazaric & Munos (2014), Sec. 4; Kiefer & Wolfowitz (1960);
    Fedorov (1972); Silvey, Titterington & Torsney (1978).

    Examples
    --------
    >>> alloc = g_allocation(8, 3)
    >>> lo, hi = g_value(alloc)
    >>> bool(hi <= 8 * (1 + 1e-2)), bool(np.isclose(alloc.weights.sum(), 1.0))
    (True, True)
    """
    door = "g_allocation"
    n, k = check_nk(n, k, door)
    for name, value, lo in (("max_iter", max_iter, 1), ("inner", inner, 0), ("max_enumerate", max_enumerate, 0)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < lo:
            raise ValueError(param_message(name, door, f"an int >= {lo}", value))
    if isinstance(tol, bool) or not isinstance(tol, numbers.Real) or not (math.isfinite(tol) and tol > 0):
        raise ValueError(param_message("tol", door, "a finite real number > 0", tol))
    if isinstance(prune, bool) or not isinstance(prune, numbers.Real) or not 0.0 <= prune < 1.0:
        raise ValueError(param_message("prune", door, "a real number in [0, 1)", prune))
    if support is None:
        rows = uniform_allocation(n, k).support.astype(np.float64)
        restricted = False
    else:
        s = np.asarray(support)
        if s.ndim != 2 or s.shape[1] != n or s.shape[0] < 1:
            raise ValueError(param_message("support", door, f"a 2-d 0/1 array of shape (m, {n})", getattr(s, "shape",
                                           s)))
        if not np.all((s == 0) | (s == 1)) or np.any(s.sum(axis=1) != k):
            raise ValueError(param_message("support", door, f"a 0/1 array whose rows have exactly k = {k} ones", s))
        if np.linalg.matrix_rank(s.astype(np.float64)) < n:
            raise ValueError(param_message("support", door, f"of full rank n = {n} (A(lambda) must be invertible)",
                                           f"rank {np.linalg.matrix_rank(s.astype(np.float64))}"))
        rows = np.unique(s.astype(np.float64), axis=0)
        restricted = True
    enumerate_all = not restricted and math.comb(n, k) <= max_enumerate
    combos = _combos(n, k) if enumerate_all else None
    lam = np.full(rows.shape[0], 1.0 / rows.shape[0])
    index = {tuple(np.flatnonzero(r)): i for i, r in enumerate(rows)}
    upper = math.inf
    for _ in range(max_iter):
        for _ in range(inner):
            W = _design_inverse(rows, lam)
            lam = lam * _row_norms(rows, W) / n
            lam /= lam.sum()
        W = _design_inverse(rows, lam)
        g_rows = _row_norms(rows, W)
        if restricted:
            j = int(np.argmax(g_rows))
            members, g_plus, upper = tuple(np.flatnonzero(rows[j])), float(g_rows[j]), float(g_rows[j])
        elif enumerate_all:
            r, g_plus = argmax_quadratic(W, combos)
            members, g_plus, upper = tuple(combos[r]), float(g_plus), float(g_plus)
        else:
            mask, g_plus = qp_greedy(W, k)
            members, g_plus = tuple(np.flatnonzero(mask)), float(g_plus)
            j = int(np.argmax(g_rows))
            if g_rows[j] > g_plus:
                members, g_plus = tuple(np.flatnonzero(rows[j])), float(g_rows[j])
            upper = max(g_plus, float(row_bound(W, k)))
        if upper <= n * (1.0 + tol) or g_plus <= n:
            break
        alpha = (g_plus / n - 1.0) / (g_plus - 1.0)
        lam *= 1.0 - alpha
        if members in index:
            lam[index[members]] += alpha
        else:
            new = np.zeros((1, n))
            new[0, list(members)] = 1.0
            rows = np.vstack([rows, new])
            lam = np.append(lam, alpha)
            index[members] = rows.shape[0] - 1
    if upper > n * (1.0 + tol):
        warnings.warn(f"g_allocation stopped after max_iter={max_iter} iterations with a certified G-value bound "
                      f"{upper:.6g} > n (1 + tol) = {n * (1 + tol):.6g}; the allocation is valid but less "
                      "efficient than requested: raise max_iter (or tol) to reach the certificate.", SettingsWarning,
                      stacklevel=2)
    keep = lam >= prune / lam.shape[0]
    if np.linalg.matrix_rank(rows[keep]) == n:
        rows, lam = rows[keep], lam[keep]
    return Allocation(rows.astype(bool), lam / lam.sum(), "g")


def efficient_apportionment(weights, N: int) -> np.ndarray:
    r"""Integer pull counts for a budget of ``N`` pulls from proportions ``weights`` (App. D; Pukelsheim &
    Rieder 1992).

    Start from :math:`n_i = \lceil (N - m/2)\,w_i\rceil` (``m`` rows of positive weight); while
    :math:`\sum n_i < N` increase one :math:`n_j` attaining :math:`\min_j n_j / w_j`, while
    :math:`\sum n_i > N` decrease one attaining :math:`\max_j (n_j - 1)/w_j` (ties: the lower index).
    Rows of zero weight get 0.

    >>> efficient_apportionment([0.5, 0.3, 0.2], 10).tolist()
    [5, 3, 2]
    """
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim != 1 or w.size == 0 or not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
        raise ValueError(param_message("weights", "efficient_apportionment",
                                       "a non-empty 1-d array of finite non-negative "
                              "numbers with a positive sum", weights))
    pos = w > 0
    m = int(pos.sum())
    if isinstance(N, bool) or not isinstance(N, numbers.Integral) or N < m:
        raise ValueError(param_message("N", "efficient_apportionment", f"an int >= the number of positive weights {m}",
                                       N))
    w = w / w.sum()
    counts = np.zeros(w.shape[0], dtype=np.int64)
    counts[pos] = np.ceil((N - m / 2.0) * w[pos]).astype(np.int64)
    idx = np.flatnonzero(pos)
    while counts.sum() < N:
        j = idx[np.argmin(counts[idx] / w[idx])]
        counts[j] += 1
    while counts.sum() > N:
        j = idx[np.argmax((counts[idx] - 1) / w[idx])]
        counts[j] -= 1
    return counts

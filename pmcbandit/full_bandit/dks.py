r"""0-1 quadratic maximisation over k-sets: the densest-k-subgraph reduction (Alg. 1) and certified bounds.

The problem (Kuroki et al. 2020, eq. (2), QP): :math:`\max x^\top Q x` s.t. :math:`x \in \{0,1\}^n`,
:math:`\sum_i x_i = k`, for a symmetric :math:`Q`. With :math:`Q = W = A_t^{-1}` it is the
confidence-ellipsoid maximisation CEM (eq. (1)) squared; SA-FOA's linearised objective
(:mod:`~pmcbandit.full_bandit.sa_foa`) is a QP with an indefinite diagonal.

Reduction to densest-k-subgraph (Alg. 1)
----------------------------------------
Put on the complete graph the edge weights :math:`w_{ij} = Q_{ij} + (Q_{ii}+Q_{jj})/(2(k-1))`.
For :math:`|S| = k`, each vertex of :math:`S` lies in :math:`k-1` edges of :math:`S`, so

.. math:: \sum_{\{i,j\}\subseteq S} w_{ij}
   = \sum_{\{i,j\}\subseteq S} Q_{ij} + \frac{k-1}{2(k-1)}\sum_{i\in S} Q_{ii}
   = \tfrac12 \chi_S^\top Q \chi_S .

Non-negative weights. The paper's Lemma 4 claims :math:`w_{ij} \ge 0` for positive definite
:math:`Q`. That holds for :math:`k = 2` (:math:`w_{ij} \ge Q_{ij} + \sqrt{Q_{ii}Q_{jj}} \ge 0` by
AM-GM and :math:`|Q_{ij}| < \sqrt{Q_{ii}Q_{jj}}`), but not for :math:`k > 2`: :math:`Q_{11}=Q_{22}=1`,
:math:`Q_{12}=-0.9` is positive definite and :math:`w_{12} = -0.9 + 1/(k-1) < 0` for :math:`k=3`.
Greedy peeling needs non-negative weights, so we add :math:`c = \max(0, -\min_{i\ne j} w_{ij})` to every
edge: every k-set gains exactly :math:`c\binom k2`, so **the k-sets' order, and the maximiser, are
unchanged** and the QP value of a set is recovered exactly as :math:`2(w'(S) - c\binom k2)`; the
oracle then runs on an instance of the (non-negative) DkS problem.

DkS oracle: greedy peeling (Asahiro, Iwama, Tamaki & Tokuyama 2000; paper App. E)
-----------------------------------------------------------------------------------
Repeatedly delete a vertex of least weighted degree in the remaining graph (ties: the lower index)
until ``k`` remain; :math:`O(n^2)` with a degree array.

Certified upper bound used for stopping (row bound)
---------------------------------------------------
The approximate value of Alg. 1 is a *lower* bound on the optimum (it is the value of a feasible
set); a stopping rule needs an *upper* bound (stopping on a lower bound can stop early and void
the :math:`\delta`-PAC guarantee). For any symmetric :math:`Q` (definite or not) and :math:`|S| = k`,

.. math:: \chi_S^\top Q\chi_S = \sum_{i\in S}\Bigl(Q_{ii} + \sum_{j\in S\setminus i} Q_{ij}\Bigr)
   \le \sum_{i\in S} \rho_i \le \operatorname{top}_k(\rho), \qquad
   \rho_i = Q_{ii} + \operatorname{top}_{k-1}\{Q_{ij} : j \ne i\},

where :math:`\operatorname{top}_c` sums the :math:`c` largest values: the :math:`k-1` partners of
:math:`i` in :math:`S` contribute at most the :math:`k-1` largest entries of its row, and the best
:math:`k` rows at most :math:`\operatorname{top}_k(\rho)`. :func:`row_bound` computes it in
:math:`O(n^2 k)` (bounded insertion buffers, no allocation per row). It is exact when all
off-diagonal entries are equal (a balanced design,
:math:`A \propto \alpha I + \beta J`) and never below the optimum (tested against enumeration). It
is at most :math:`k\max_i(Q_{ii} + \sum_{j\ne i}|Q_{ij}|)` (Gershgorin times :math:`k`); the trivial
:math:`k\lambda_{\max}(Q)` bound (:func:`eigen_bound`) is also valid but needs an eigen-solve and is
looser for balanced designs.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["dks_weights", "argmax_quadratic", "subgraph_weight", "greedy_peeling", "qp_greedy", "qp_value", "row_bound",
           "eigen_bound"]


@numba.njit(cache=True)
def dks_weights(Q, k):
    """Alg. 1's graph: ``(w, shift)``, ``w[i, j] = Q_ij + (Q_ii + Q_jj)/(2(k-1)) + shift`` off the diagonal
    (0 on it), with ``shift = max(0, -min w)`` making every weight non-negative (module docstring).
    """
    n = Q.shape[0]
    w = np.zeros((n, n))
    lo = 0.0
    half = 1.0 / (2.0 * (k - 1))
    for i in range(n):
        for j in range(i + 1, n):
            v = Q[i, j] + (Q[i, i] + Q[j, j]) * half
            w[i, j] = v
            w[j, i] = v
            if v < lo:
                lo = v
    shift = -lo
    if shift > 0.0:
        for i in range(n):
            for j in range(n):
                if i != j:
                    w[i, j] += shift
    return w, shift


@numba.njit(cache=True)
def subgraph_weight(w, mask):
    """Total weight of the edges inside the vertex set ``mask``."""
    n = w.shape[0]
    s = 0.0
    for i in range(n):
        if mask[i]:
            for j in range(i + 1, n):
                if mask[j]:
                    s += w[i, j]
    return s


@numba.njit(cache=True)
def greedy_peeling(w, k):
    """Greedy peeling DkS oracle: delete the least-weighted-degree vertex until ``k`` remain (bool mask)."""
    n = w.shape[0]
    alive = np.ones(n, dtype=np.bool_)
    deg = np.zeros(n)
    for i in range(n):
        s = 0.0
        for j in range(n):
            s += w[i, j]
        deg[i] = s
    for _ in range(n - k):
        best = -1
        best_d = np.inf
        for i in range(n):
            if alive[i] and deg[i] < best_d:
                best_d = deg[i]
                best = i
        alive[best] = False
        for j in range(n):
            deg[j] -= w[j, best]
    return alive


@numba.njit(cache=True)
def qp_value(Q, mask):
    """:math:`\\chi_S^\\top Q \\chi_S`."""
    n = Q.shape[0]
    s = 0.0
    for i in range(n):
        if mask[i]:
            for j in range(n):
                if mask[j]:
                    s += Q[i, j]
    return s


@numba.njit(cache=True)
def qp_greedy(Q, k):
    """Alg. 1 with greedy peeling: ``(mask, value)``, a feasible k-set and its :math:`\\chi^\\top Q\\chi`."""
    w, _ = dks_weights(Q, k)
    mask = greedy_peeling(w, k)
    return mask, qp_value(Q, mask)


@numba.njit(cache=True)
def push_top(buf, idx_buf, count, cap, value, index):
    r"""Insert ``value`` (with ``index``) into the descending buffer ``buf[:count]`` holding at most ``cap``
    largest values; returns the new count. :math:`O(\mathrm{cap})` worst case, :math:`O(1)` when ``value``
    does not enter.
    """
    if cap <= 0:
        return 0
    if count == cap:
        if value <= buf[cap - 1]:
            return count
        pos = cap - 1
    else:
        pos = count
        count += 1
    while pos > 0 and buf[pos - 1] < value:
        buf[pos] = buf[pos - 1]
        idx_buf[pos] = idx_buf[pos - 1]
        pos -= 1
    buf[pos] = value
    idx_buf[pos] = index
    return count


@numba.njit(cache=True)
def row_bound(Q, k):
    r"""Certified upper bound :math:`\operatorname{top}_k(\rho)` on :math:`\max_{|S|=k}\chi_S^\top Q\chi_S`
    (module docstring), for any symmetric ``Q``.
    """
    n = Q.shape[0]
    buf = np.empty(k)
    ibuf = np.empty(k, dtype=np.int64)
    top = np.empty(k)
    itop = np.empty(k, dtype=np.int64)
    ct = 0
    for i in range(n):
        c = 0
        for j in range(n):
            if j != i:
                c = push_top(buf, ibuf, c, k - 1, Q[i, j], j)
        rho = Q[i, i]
        for a in range(c):
            rho += buf[a]
        ct = push_top(top, itop, ct, k, rho, i)
    out = 0.0
    for a in range(ct):
        out += top[a]
    return out


def eigen_bound(Q: np.ndarray, k: int) -> float:
    """The trivial certified bound :math:`k\\lambda_{\\max}(Q)`:
    :math:`x^\\top Q x \\le \\lambda_{\\max}\\|x\\|^2 = k\\lambda_{\\max}`.
    """
    return float(k * np.linalg.eigvalsh(Q)[-1])


@numba.njit(cache=True)
def argmax_quadratic(W, combos):
    """The row ``r`` of ``combos`` (k-sets as index rows) maximising :math:`\\chi_r^\\top W \\chi_r`,
    and the maximum.
    """
    best = -np.inf
    arg = 0
    k = combos.shape[1]
    for r in range(combos.shape[0]):
        s = 0.0
        for a in range(k):
            for b in range(k):
                s += W[combos[r, a], combos[r, b]]
        if s > best:
            best = s
            arg = r
    return arg, best

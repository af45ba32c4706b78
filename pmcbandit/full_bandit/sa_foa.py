r"""SA-FOA: Static Allocation with First-Order Approximation (Kuroki et al. 2020, Alg. 3).

SA-FOA bounds the gap directly. With :math:`m = \chi_{\hat M_t}`, :math:`W = A_t^{-1}`, on the
event of Prop. 1 over the directions :math:`\chi_M - \chi_{M^*}` (:mod:`~pmcbandit.full_bandit.base`),

.. math:: \theta(M^*) - \theta(\hat M_t) \le Z^*_t = \max_M\, (\chi_M - m)^\top\hat\theta_t
          + C_t\|\chi_M - m\|_W \qquad \text{(eq. (5))},

so stopping when an upper bound on :math:`Z^*_t` is :math:`\le\epsilon` returns an
:math:`\epsilon`-optimal set with probability :math:`\ge 1-\delta`.

First-order approximation (Alg. 3)
----------------------------------
:math:`\sqrt x \le x/(2\sqrt a) + \sqrt a/2` for all :math:`x \ge 0, a > 0` (tangent of the
concave root at :math:`a`). With :math:`x = \chi_M` binary (:math:`x_i^2 = x_i`),

.. math:: (x-m)^\top\hat\theta + C\|x-m\|_W \le x^\top Q_a x + c_a,\quad
   Q_a = \tfrac{C}{2\sqrt a}W + \operatorname{diag}\bigl(\hat\theta - \tfrac{C}{\sqrt a}Wm\bigr),\quad
   c_a = -m^\top\hat\theta + \tfrac{C}{2\sqrt a}m^\top Wm + \tfrac{C\sqrt a}2,

a 0-1 QP that Alg. 1 (:func:`~pmcbandit.full_bandit.dks.qp_greedy`) solves approximately for a
few values of :math:`a`; the best set under the original objective is kept
(:func:`approximate_gap`: the paper's :math:`Z_t`, a *lower* bound on :math:`Z^*_t`).

Certified upper bound used to stop (:func:`gap_bound`)
------------------------------------------------------
The paper stops on the approximate :math:`Z_t`, which can be below :math:`Z^*_t` (it then stops
early, without the guarantee). We stop on a certified bound built the same way. Write
:math:`\chi_M - m = Dz` with :math:`D = \operatorname{diag}(\sigma)`, :math:`\sigma_i = -1` on
:math:`\hat M_t` and :math:`+1` off it, and :math:`z \in\{0,1\}^n` the indicator of the symmetric
difference: :math:`j` arms from outside :math:`\hat M_t` (set :math:`O`) and :math:`j` from inside
(set :math:`I`), :math:`1 \le j \le \min(k, n-k)` (:math:`j = 0` is :math:`\hat M_t`, value 0). Then
:math:`(\chi_M-m)^\top\hat\theta = g^\top z` with :math:`g = D\hat\theta` and
:math:`\|\chi_M-m\|_W^2 = z^\top Vz` with :math:`V = DWD`. Row bound with the two sides apart
(:mod:`~pmcbandit.full_bandit.dks`): each chosen :math:`i` meets :math:`j-1` others on its side and
:math:`j` on the other, so

.. math:: z^\top Vz \le h^{(j)\top}z,\quad
   h^{(j)}_i = V_{ii} + \operatorname{top}_{j-1}\{V_{il}: l \text{ same side}, l\ne i\}
   + \operatorname{top}_j\{V_{il}: l \text{ other side}\}.

With the tangent bound, for every :math:`a > 0`,

.. math:: \max_{|z\cap O| = |z\cap I| = j} g^\top z + C\sqrt{z^\top Vz}
   \le G_j(a) = \operatorname{top}_j^{O}(g + \tfrac{C}{2\sqrt a}h^{(j)})
   + \operatorname{top}_j^{I}(g + \tfrac{C}{2\sqrt a}h^{(j)}) + \tfrac{C\sqrt a}{2},

separable, so exact in :math:`O(n\log n)`. Any :math:`a` is valid; we iterate
:math:`a \leftarrow h^{(j)\top}z_a` (the tangent point of the current maximiser; at most 8 steps,
from the set of the ``j`` largest :math:`g` per side) and keep the smallest :math:`G_j`. The
statistic :math:`\max(0, \max_j \min_a G_j(a))` is never below :math:`Z^*_t` (tested against
enumeration) and is exact for balanced designs (all off-diagonal :math:`W_{il}` equal). Cost
:math:`O(n^2 J)` per round (:math:`J = \min(k, n-k)`), and inside the stopping loop it returns as
soon as one :math:`j` exceeds :math:`\epsilon`.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from pmcbandit.full_bandit._build import build
from pmcbandit.full_bandit.dks import push_top, qp_greedy
from pmcbandit.full_bandit.least_squares import DEFAULT_REFRESH_EVERY

__all__ = ["sa_foa", "gap_bound", "approximate_gap", "gap_value", "empirical_best_mask"]

_FIXED_POINT_STEPS = 8
_GRID = 12


@numba.njit(cache=True)
def empirical_best_mask(theta_hat, k):
    """:math:`\\hat M_t` as a bool mask (top-k, ties by the lower index)."""
    order = np.argsort(-theta_hat, kind="mergesort")
    m = np.zeros(theta_hat.shape[0], dtype=np.bool_)
    for a in range(k):
        m[order[a]] = True
    return m


@numba.njit(cache=True)
def gap_value(W, theta_hat, mhat, x, C):
    """Eq. (5)'s objective for one set ``x``: :math:`(x-m)^\\top\\hat\\theta + C\\|x-m\\|_W`."""
    n = W.shape[0]
    lin = 0.0
    quad = 0.0
    for i in range(n):
        yi = (1.0 if x[i] else 0.0) - (1.0 if mhat[i] else 0.0)
        if yi != 0.0:
            lin += yi * theta_hat[i]
            for j in range(n):
                yj = (1.0 if x[j] else 0.0) - (1.0 if mhat[j] else 0.0)
                if yj != 0.0:
                    quad += yi * yj * W[i, j]
    return lin + C * math.sqrt(max(quad, 0.0))


@numba.njit(cache=True)
def _select(values, h, group, j, buf, ibuf):
    # top-j of values over the indices in group: (sum of values, sum of h) of the chosen ones
    c = 0
    for a in range(group.shape[0]):
        c = push_top(buf, ibuf, c, j, values[group[a]], group[a])
    sv = 0.0
    sh = 0.0
    for a in range(c):
        sv += buf[a]
        sh += h[ibuf[a]]
    return sv, sh


@numba.njit(cache=True)
def gap_bound(W, theta_hat, k, C, eps, full):
    """Certified upper bound on :math:`Z^*_t` (module docstring). With ``full=False`` it returns as soon as
    the running bound exceeds ``eps`` (then only ``> eps`` is certain, which is all a stop check needs).
    """
    n = W.shape[0]
    mhat = empirical_best_mask(theta_hat, k)
    J = min(k, n - k)
    inside = np.empty(k, dtype=np.int64)
    outside = np.empty(n - k, dtype=np.int64)
    ci = 0
    co = 0
    sig = np.empty(n)
    for i in range(n):
        if mhat[i]:
            inside[ci] = i
            ci += 1
            sig[i] = -1.0
        else:
            outside[co] = i
            co += 1
            sig[i] = 1.0
    same_pref = np.zeros((n, J + 1))
    other_pref = np.zeros((n, J + 1))
    sbuf = np.empty(J + 1)
    obuf = np.empty(J + 1)
    ibuf = np.empty(J + 1, dtype=np.int64)
    for i in range(n):
        cs = 0
        cn = 0
        for l in range(n):
            if l == i:
                continue
            v = sig[i] * sig[l] * W[i, l]
            if mhat[l] == mhat[i]:
                cs = push_top(sbuf, ibuf, cs, J, v, l)
            else:
                cn = push_top(obuf, ibuf, cn, J, v, l)
        for c in range(1, J + 1):
            same_pref[i, c] = same_pref[i, c - 1] + (sbuf[c - 1] if c <= cs else 0.0)
            other_pref[i, c] = other_pref[i, c - 1] + (obuf[c - 1] if c <= cn else 0.0)
    g = np.empty(n)
    for i in range(n):
        g[i] = sig[i] * theta_hat[i]
    h = np.empty(n)
    vals = np.empty(n)
    bound = 0.0
    for j in range(1, J + 1):
        for i in range(n):
            h[i] = W[i, i] + same_pref[i, j - 1] + other_pref[i, j]
        _, ho = _select(g, h, outside, j, sbuf, ibuf)
        _, hi = _select(g, h, inside, j, sbuf, ibuf)
        a = ho + hi
        best = np.inf
        for _ in range(_FIXED_POINT_STEPS):
            if not a > 0.0:
                break
            c = C / (2.0 * math.sqrt(a))
            for i in range(n):
                vals[i] = g[i] + c * h[i]
            vo, ho = _select(vals, h, outside, j, sbuf, ibuf)
            vi, hi = _select(vals, h, inside, j, sbuf, ibuf)
            G = vo + vi + 0.5 * C * math.sqrt(a)
            if G < best:
                best = G
            a_new = ho + hi
            if abs(a_new - a) <= 1e-12 * a:
                break
            a = a_new
        if best > bound:
            bound = best
        if not full and bound > eps:
            return bound
    return bound


@numba.njit(cache=True)
def _peel_at(W, theta_hat, wm, k, C, a, Q):
    c = C / (2.0 * math.sqrt(a))
    n = W.shape[0]
    for i in range(n):
        for j in range(n):
            Q[i, j] = c * W[i, j]
        Q[i, i] += theta_hat[i] - 2.0 * c * wm[i]
    mask, _ = qp_greedy(Q, k)
    return mask


@numba.njit(cache=True)
def approximate_gap(W, theta_hat, k, C):
    r"""Alg. 3: Alg. 1 on :math:`Q_a` for a geometric grid of :math:`a` (``_GRID`` points from
    :math:`\min_i W_{ii}/4` to :math:`2k\max_i W_{ii}`, the range of :math:`\|\chi_M - m\|_W^2` for
    one to ``k`` swaps with room below, since the tangent works best somewhat under the true square
    norm), then up to 3 steps of :math:`a \leftarrow \|x_a - m\|_W^2` from the best set found; the
    best set under eq. (5) gives the paper's :math:`Z_t` (a lower bound on :math:`Z^*_t`).
    """
    n = W.shape[0]
    mhat = empirical_best_mask(theta_hat, k)
    wm = np.zeros(n)
    mwm = 0.0
    for i in range(n):
        s = 0.0
        for j in range(n):
            if mhat[j]:
                s += W[i, j]
        wm[i] = s
        if mhat[i]:
            mwm += s
    dmin = np.inf
    dmax = 0.0
    for i in range(n):
        dmin = min(dmin, W[i, i])
        dmax = max(dmax, W[i, i])
    lo = 0.25 * dmin
    hi = 2.0 * k * dmax
    best = 0.0
    best_mask = mhat.copy()
    Q = np.empty((n, n))
    for step in range(_GRID):
        a = lo * (hi / lo) ** (step / (_GRID - 1.0))
        mask = _peel_at(W, theta_hat, wm, k, C, a, Q)
        v = gap_value(W, theta_hat, mhat, mask, C)
        if v > best:
            best = v
            best_mask = mask
    for _ in range(3):
        a = 0.0  # ||x - m||_W^2 of the best set
        for i in range(n):
            if best_mask[i]:
                for j in range(n):
                    if best_mask[j]:
                        a += W[i, j]
                a -= 2.0 * wm[i]
        a += mwm
        if not a > 0.0:
            break
        mask = _peel_at(W, theta_hat, wm, k, C, a, Q)
        v = gap_value(W, theta_hat, mhat, mask, C)
        if v <= best:
            break
        best = v
        best_mask = mask
    return best


def sa_foa(n: int, k: int, delta: float = 0.05, epsilon: float = 0.0, sigma: float = 1.0, *, noise: str = "independent",
           allocation="uniform", refresh_every: int = DEFAULT_REFRESH_EVERY, width_scale: float = 1.0,
           width: str = "paper",
           allocation_kwargs: dict | None = None):
    """SA-FOA (Alg. 3), stopping on the certified :func:`gap_bound`.

    Parameters as :func:`~pmcbandit.full_bandit.saqm.saqm`. Returns a ``FullBanditIdentifier``.
    """
    return build("sa_foa", n, k, delta, epsilon, sigma, noise, allocation,
                 lambda W, th, C, full: gap_bound(W, th, k, C, float(epsilon), full), refresh_every=refresh_every,
                 width_scale=width_scale, width=width, allocation_kwargs=allocation_kwargs)

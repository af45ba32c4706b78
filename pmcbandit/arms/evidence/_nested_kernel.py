"""Nested sampling on the unconstrained space, in numba: one run from exact prior draws to a stopping rule.

The live set is ``n_live`` points ``x`` with their ``(logprior, loglik)`` and a tie-break label
``u ~ U(0, 1)``; points are ordered by ``(loglik, u)``, so a likelihood with plateaus (``-inf`` outside
its support) is ordered as a continuous one. Each iteration removes the ``n_replace`` lowest points one
at a time, the live count falling from ``n`` to ``n - n_replace + 1``, and then replaces each by a
constrained-prior draw: a copy of a random survivor moved by ``n_moves`` slice-sampling steps
(Neal 2003, Sec. 4: stepping out, Fig. 3, and shrinkage, Fig. 5) on the prior restricted to
``(loglik, u) > (loglik*, u*)``, the point's label kept during a step and then redrawn uniformly from
the labels that keep it above the threshold. A step's line runs through the current point along either
the difference of two random survivors (the differential direction of ensemble slice sampling,
Karamanis & Beutler 2021, "Ensemble slice sampling", Stat. Comput. 31: it takes the scale and
correlations of the constrained region from the live set) or, with probability one half, a Gaussian
direction scaled per coordinate by the survivors' standard deviation (so the moves reach every
direction when the live set spans fewer than the dimension). Each direction is drawn independently of
the moving point, given the survivors, so every step leaves the constrained prior invariant. The
replacements of an iteration are independent chains, each on its own xoshiro256**
stream, run in ``prange`` when compiled parallel.

The model's density is the C function ``terms`` of
:data:`~pmcbandit.arms.evidence._kernels.TERMS_SIG` (the density's ``terms_fn``), so the
kernels are compiled once for every model and cached on disk.

The estimator (:mod:`pmcbandit.arms.evidence.nested`, Notes) is accumulated in log space:
removing the lowest of ``n`` live points, at likelihood :math:`L`, adds :math:`\\hat X L / n` to
:math:`\\hat Z` and multiplies :math:`\\hat X` by :math:`1 - 1/n`; at the stop,
:math:`\\hat X` times the mean likelihood of the live points is added.
"""

from __future__ import annotations

import numba
import numpy as np

from pmcbandit.arms.evidence._kernels import eval_terms, std_normal, uniform

__all__ = ["nested_run_serial", "nested_run_parallel", "STATS"]

#: The fields of a run's ``stats`` output, in order.
STATS = ("log_z", "kills", "evals", "log_x", "stopped")
_MAX_SHRINK = 2000


@numba.njit(cache=True)
def _above(ll, lab, ll_star, lab_star):
    return ll > ll_star or (ll == ll_star and lab > lab_star)


@numba.njit(cache=True)
def _logaddexp(a, b):
    if a == -np.inf:
        return b
    if b == -np.inf:
        return a
    m = max(a, b)
    return m + np.log(np.exp(a - m) + np.exp(b - m))


@numba.njit(cache=True)
def _at(terms, y, t, d, z, buf):
    """``(logprior, loglik)`` at ``z = y + t d`` (``z`` written in place, ``buf`` a 2-vector of scratch)."""
    for i in range(y.shape[0]):
        z[i] = y[i] + t * d[i]
    eval_terms(terms, z, buf)
    return buf[0], buf[1]


@numba.njit(cache=True)
def _move(terms, y, cur, lab, ens, sd, ll_star, lab_star, n_moves, max_stepout, s, d, z):
    """``n_moves`` slice steps of ``y`` (in place, with ``cur = [lp, ll]`` and ``lab[0]``) on the prior
    restricted to ``(ll, lab) > (ll_star, lab_star)``, along directions from the ensemble ``ens``.
    Returns the number of density evaluations.
    """
    m, dim = ens.shape
    evals = 0
    buf = np.empty(2)
    for _ in range(n_moves):
        if m >= 2 and uniform(s) < 0.5:
            a = int(uniform(s) * m)
            b = int(uniform(s) * (m - 1))
            if b >= a:
                b += 1
            for i in range(dim):
                d[i] = ens[a, i] - ens[b, i]
        else:
            for i in range(dim):
                d[i] = sd[i] * std_normal(s)
        log_y = cur[0] + np.log(uniform(s))
        left = -uniform(s)
        right = left + 1.0
        j = int(np.floor(max_stepout * uniform(s)))
        r = max_stepout - 1 - j
        while j > 0:
            lpv, llv = _at(terms, y, left, d, z, buf)
            evals += 1
            if not (lpv > log_y and _above(llv, lab[0], ll_star, lab_star)):
                break
            left -= 1.0
            j -= 1
        while r > 0:
            lpv, llv = _at(terms, y, right, d, z, buf)
            evals += 1
            if not (lpv > log_y and _above(llv, lab[0], ll_star, lab_star)):
                break
            right += 1.0
            r -= 1
        for _ in range(_MAX_SHRINK):
            t = left + uniform(s) * (right - left)
            lpv, llv = _at(terms, y, t, d, z, buf)
            evals += 1
            if lpv > log_y and _above(llv, lab[0], ll_star, lab_star):
                for i in range(dim):
                    y[i] = z[i]
                cur[0] = lpv
                cur[1] = llv
                break
            if t < 0.0:
                left = t
            else:
                right = t
        # The label given the point: uniform on the labels that keep it above the threshold.
        lab[0] = lab_star + uniform(s) * (1.0 - lab_star) if cur[1] == ll_star else uniform(s)
    return evals


def _nested_run(terms, x, lp, ll, lab, n_replace, n_moves, max_stepout, depth, max_kills, master, seeds, stats):
    n, dim = x.shape
    log_x = 0.0
    log_z = -np.inf
    kills = 0
    evals = 0
    stopped = 0.0
    alive = np.ones(n, dtype=np.bool_)
    slots = np.empty(n_replace, dtype=np.int64)
    starts = np.empty(n_replace, dtype=np.int64)
    counts = np.zeros(n_replace, dtype=np.int64)
    while True:
        ll_star = -np.inf
        lab_star = 0.0
        for k in range(n_replace):
            low = -1
            for i in range(n):
                if alive[i] and (low < 0 or not _above(ll[i], lab[i], ll[low], lab[low])):
                    low = i
            live = n - k
            log_z = _logaddexp(log_z, ll[low] + log_x - np.log(live))
            log_x += np.log1p(-1.0 / live)
            alive[low] = False
            slots[k] = low
            ll_star = ll[low]
            lab_star = lab[low]
            kills += 1
        # The stopping rule reads only the removed points (a stopping time of their sequence).
        if kills >= max_kills or (ll_star + log_x < log_z - depth):
            stopped = 1.0 if kills < max_kills else 0.0
            break
        m = n - n_replace
        ens = np.empty((m, dim))
        j = 0
        for i in range(n):
            if alive[i]:
                for c in range(dim):
                    ens[j, c] = x[i, c]
                j += 1
        sd = np.empty(dim)
        for i in range(dim):
            mean = 0.0
            for r in range(m):
                mean += ens[r, i]
            mean /= m
            acc = 0.0
            for r in range(m):
                acc += (ens[r, i] - mean) ** 2
            sd[i] = np.sqrt(acc / max(m - 1, 1))
            if not sd[i] > 0.0:
                sd[i] = 1e-3
        for k in range(n_replace):
            c = int(uniform(master) * m)
            j = 0
            for i in range(n):
                if alive[i]:
                    if j == c:
                        starts[k] = i
                        break
                    j += 1
        for k in numba.prange(n_replace):
            slot = slots[k]
            src = starts[k]
            y = x[src].copy()
            cur = np.empty(2)
            cur[0] = lp[src]
            cur[1] = ll[src]
            lab_k = np.empty(1)
            lab_k[0] = lab[src]
            d = np.empty(dim)
            z = np.empty(dim)
            s = seeds[slot]
            counts[k] = _move(terms, y, cur, lab_k, ens, sd, ll_star, lab_star, n_moves, max_stepout, s, d, z)
            for c in range(dim):
                x[slot, c] = y[c]
            lp[slot] = cur[0]
            ll[slot] = cur[1]
            lab[slot] = lab_k[0]
        for k in range(n_replace):
            evals += counts[k]
            alive[slots[k]] = True
    # The remainder: the estimated volume left times the mean likelihood of the survivors.
    top = -np.inf
    for i in range(n):
        if alive[i] and ll[i] > top:
            top = ll[i]
    rest = -np.inf
    if top > -np.inf:
        acc = 0.0
        m = 0
        for i in range(n):
            if alive[i]:
                acc += np.exp(ll[i] - top)
                m += 1
        rest = log_x + top + np.log(acc / m)
    stats[0] = _logaddexp(log_z, rest)
    stats[1] = kills
    stats[2] = evals
    stats[3] = log_x
    stats[4] = stopped


nested_run_serial = numba.njit(parallel=False, cache=True)(_nested_run)
nested_run_parallel = numba.njit(parallel=True, cache=True)(_nested_run)

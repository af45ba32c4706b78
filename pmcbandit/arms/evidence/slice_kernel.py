"""Annealed importance sampling with coordinate-wise slice-sampling transitions, in numba.

One chain (Neal 2001, Sec. 2): draw :math:`x_0` from the prior, then for
:math:`j = 1..n`

.. math:: \\log w \\mathrel{+}= (\\beta_j - \\beta_{j-1})\\, \\ell(x_{j-1}),
   \\qquad x_j \\sim T_j(x_{j-1}, \\cdot) \\ (j < n),

where :math:`\\ell` is the log likelihood and :math:`T_j` leaves
:math:`\\pi_j \\propto p(x) e^{\\beta_j \\ell(x)}` invariant; :math:`E[w] = Z`.
:math:`T_j` is one sweep of univariate slice sampling over the coordinates
(Neal 2003, Sec. 4: stepping out with at most ``max_stepout`` steps, Fig. 3,
and shrinkage, Fig. 5). The current point's ``(logprior, loglik)`` is carried
along, so a coordinate update costs the evaluations of its stepping-out and
shrinkage proposals only. No transition follows the last increment: it would
not change the weight.

A chain whose weight becomes zero (``loglik = -inf`` with a positive
increment) stops early; its log weight is ``-inf``, still an unbiased estimate.

The model's density is the C function ``terms`` of
:data:`~pmcbandit.arms.evidence._kernels.TERMS_SIG` (the density's ``terms_fn``), so the
kernels are compiled once for every model and cached on disk.
"""

from __future__ import annotations

import numba
import numpy as np

from pmcbandit.arms.evidence._kernels import eval_terms, uniform

__all__ = ["ais_slice_serial", "ais_slice_parallel"]

# Shrinkage converges to the current point (which lies in the slice) within
# ~1100 halvings of a double interval; the cap only guards NaN-producing models.
_MAX_SHRINK = 2000


@numba.njit(inline="always")
def _tempered(lp, ll, beta):
    if beta == 0.0:
        return lp
    return lp + beta * ll


@numba.njit(cache=True)
def _slice_sweep(terms, x, cur, beta, width, max_stepout, s):
    """One coordinate-wise slice-sampling sweep at inverse temperature ``beta``.

    ``cur`` holds (logprior, loglik) of ``x`` and is updated in place with ``x``.
    Returns the number of density evaluations.
    """
    evals = 0
    d = x.shape[0]
    buf = np.empty(2)
    for i in range(d):
        x0 = x[i]
        w = width[i]
        log_y = _tempered(cur[0], cur[1], beta) + np.log(uniform(s))
        left = x0 - w * uniform(s)
        right = left + w
        j = int(np.floor(max_stepout * uniform(s)))
        k = max_stepout - 1 - j
        while j > 0:
            x[i] = left
            eval_terms(terms, x, buf)
            evals += 1
            if not _tempered(buf[0], buf[1], beta) > log_y:
                break
            left -= w
            j -= 1
        while k > 0:
            x[i] = right
            eval_terms(terms, x, buf)
            evals += 1
            if not _tempered(buf[0], buf[1], beta) > log_y:
                break
            right += w
            k -= 1
        accepted = False
        for _ in range(_MAX_SHRINK):
            x1 = left + uniform(s) * (right - left)
            x[i] = x1
            eval_terms(terms, x, buf)
            evals += 1
            lpv = buf[0]
            llv = buf[1]
            if _tempered(lpv, llv, beta) > log_y:
                cur[0] = lpv
                cur[1] = llv
                accepted = True
                break
            if x1 < x0:
                left = x1
            else:
                right = x1
        if not accepted:
            x[i] = x0
    return evals


def _ais_slice(terms, x0, betas, width, max_stepout, seeds, log_w, evals, ll_end):
    n_chains = x0.shape[0]
    n = betas.shape[0] - 1
    for c in numba.prange(n_chains):
        x = x0[c].copy()
        s = seeds[c].copy()
        cur = np.empty(2)
        eval_terms(terms, x, cur)
        count = 1
        lw = 0.0
        for j in range(1, n + 1):
            db = betas[j] - betas[j - 1]
            if db != 0.0:
                lw += db * cur[1]
            if lw == -np.inf or j == n:
                break
            count += _slice_sweep(terms, x, cur, betas[j], width, max_stepout, s)
        log_w[c] = lw
        evals[c] = count
        ll_end[c] = cur[1]  # the log likelihood at the chain's final state, where its last weight factor was read


ais_slice_serial = numba.njit(parallel=False, cache=True)(_ais_slice)
ais_slice_parallel = numba.njit(parallel=True, cache=True)(_ais_slice)

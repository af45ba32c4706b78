"""AIS with independence-Metropolis transitions from an interpolated Laplace proposal, in numba.

For near-Gaussian posteriors a slice-sampling sweep (about five density
evaluations per coordinate) is wasteful: one independence Metropolis-Hastings
move (Tierney 1994) per temperature, from a proposal close to the tempered
target :math:`\\pi_\\beta \\propto p(x)\\,e^{\\beta\\ell(x)}`, costs one
evaluation. The proposal at :math:`\\beta` is a multivariate Student-t with
``df`` degrees of freedom (Gaussian for ``df = 0``) whose location and scale are
those of the geometric interpolation of two Gaussians, the Laplace
approximations of the prior :math:`N(m_0, P_0^{-1})` and of the posterior
:math:`N(m_1, P_1^{-1})`:

.. math:: P_\\beta = (1-\\beta) P_0 + \\beta P_1, \\qquad
          m_\\beta = P_\\beta^{-1}\\big((1-\\beta) P_0 m_0 + \\beta P_1 m_1\\big),

exact when prior and likelihood are Gaussian. With the generalised
eigenvectors :math:`A` of :math:`(P_1, P_0)` (:math:`A^\\top P_0 A = I`,
:math:`A^\\top P_1 A = \\Lambda`), :math:`P_\\beta` is diagonal,
:math:`D_\\beta = (1-\\beta) + \\beta\\Lambda`, in the coordinates
:math:`y = A^{-1}x`, so a move costs :math:`O(d^2)` besides the density. The
acceptance ratio :math:`\\pi_\\beta(x')q_\\beta(x)/(\\pi_\\beta(x)q_\\beta(x'))`
makes each move leave :math:`\\pi_\\beta` invariant whatever the proposal, so
the AIS weights (Neal 2001) stay unbiased; the proposal only affects variance.
"""

from __future__ import annotations

import numba
import numpy as np

from pmcbandit.arms.evidence._kernels import std_normal, uniform

__all__ = ["interpolated_laplace", "ais_imh_serial", "ais_imh_parallel"]


def interpolated_laplace(prior_fit, posterior_fit, betas):
    """Per-temperature proposal parameters in the shared eigen-coordinates.

    Parameters
    ----------
    prior_fit, posterior_fit : tuple of (mean, precision)
        Gaussian fits of the prior and of the posterior in the unconstrained space.
    betas : ndarray of shape (n + 1,)
        The annealing schedule.

    Returns
    -------
    A, B : ndarray of shape (d, d)
        ``x = A y`` and ``y = B x`` (``B = A^{-1} = A^T P_0``).
    mu, prec : ndarray of shape (n + 1, d)
        Mean and diagonal precision of the proposal in ``y`` coordinates at each ``beta``.
    """
    from scipy.linalg import eigh

    (m0, p0), (m1, p1) = prior_fit, posterior_fit
    lam, a = eigh(p1, p0)
    b = a.T @ p0
    u0 = a.T @ p0 @ m0
    u1 = a.T @ p1 @ m1
    betas = np.asarray(betas, dtype=np.float64)[:, None]
    prec = (1.0 - betas) + betas * lam[None, :]
    mu = ((1.0 - betas) * u0[None, :] + betas * u1[None, :]) / prec
    return (np.ascontiguousarray(a), np.ascontiguousarray(b), np.ascontiguousarray(mu),
            np.ascontiguousarray(prec))


@numba.njit(inline="always")
def _tempered(lp, ll, beta):
    if beta == 0.0:
        return lp
    return lp + beta * ll


@numba.njit(inline="always")
def _log_q(quad, df, d):
    if df == 0:
        return -0.5 * quad
    return -0.5 * (df + d) * np.log1p(quad / df)


def _ais_imh(jit_fn, x0, betas, a, b, mu, prec, df, seeds, log_w, evals, accepts, ll_end):
    n_chains, d = x0.shape
    n = betas.shape[0] - 1
    for c in numba.prange(n_chains):
        x = x0[c].copy()
        s = seeds[c].copy()
        y = b @ x
        yp = np.empty(d)
        lp, ll = jit_fn(x)
        cur_lp = lp.item()
        cur_ll = ll.item()
        count = 1
        acc = 0
        lw = 0.0
        for j in range(1, n + 1):
            db = betas[j] - betas[j - 1]
            if db != 0.0:
                lw += db * cur_ll
            if lw == -np.inf or j == n:
                break
            beta = betas[j]
            scale = 1.0
            if df > 0:
                chi2 = 0.0
                for _ in range(df):
                    g = std_normal(s)
                    chi2 += g * g
                scale = np.sqrt(df / chi2)
            quad_cur = 0.0
            quad_new = 0.0
            for k in range(d):
                sd = 1.0 / np.sqrt(prec[j, k])
                z = std_normal(s) * scale
                yp[k] = mu[j, k] + z * sd
                quad_new += z * z
                r = y[k] - mu[j, k]
                quad_cur += prec[j, k] * r * r
            xp = a @ yp
            lp, ll = jit_fn(xp)
            count += 1
            new_lp = lp.item()
            new_ll = ll.item()
            log_alpha = (
                _tempered(new_lp, new_ll, beta)
                - _tempered(cur_lp, cur_ll, beta)
                + _log_q(quad_cur, df, d)
                - _log_q(quad_new, df, d)
            )
            if np.log(uniform(s)) < log_alpha:
                x[:] = xp
                y[:] = yp
                cur_lp = new_lp
                cur_ll = new_ll
                acc += 1
        log_w[c] = lw
        evals[c] = count
        accepts[c] = acc
        ll_end[c] = cur_ll  # the log likelihood at the chain's final state, where its last weight factor was read


ais_imh_serial = numba.njit(parallel=False)(_ais_imh)
ais_imh_parallel = numba.njit(parallel=True)(_ais_imh)

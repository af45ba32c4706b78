"""Bridge sampling of a model's evidence from posterior draws: the reference peer of the trace-fitted arms.

Written from the papers, on the unconstrained space of a PyMC model (the density pmcbandit compiles, so both methods
read the same :math:`\\log\\tilde p = \\log p(\\theta) + \\log p(y\\mid\\theta) + \\log|J|`):

* the iterative optimal bridge of Meng & Wong (1996, "Simulating ratios of normalizing constants via a simple
  identity", Statistica Sinica 6, eq. 4.1), with a multivariate normal proposal :math:`g` fitted to the first half of
  every chain's draws and the second halves used in the iteration, as in Gronau et al. (2017, "A tutorial on bridge
  sampling", J. Math. Psych. 81, Sec. 3): with :math:`l_1 = \\log\\tilde p - \\log g` at the :math:`N_1` posterior
  draws, :math:`l_2` at :math:`N_2` proposal draws, :math:`s_i = N_i / (N_1 + N_2)` (:math:`N_1` the posterior draws'
  effective size, as the R package ``bridgesampling`` does),

  .. math:: \\hat r^{(t+1)} = \\frac{N_2^{-1} \\sum_j e^{l_{2j}} / (s_1 e^{l_{2j}} + s_2 \\hat r^{(t)})}
                                    {N_1^{-1} \\sum_i 1 / (s_1 e^{l_{1i}} + s_2 \\hat r^{(t)})},

  iterated to a relative change below ``1e-10``;
* the warp-3 variant (Meng & Schilling 2002, "Warp bridge sampling", JCGS 11; Gronau et al. 2017, Sec. 4): the
  posterior is standardised by the fitted mean :math:`\\mu` and Cholesky factor :math:`L` and symmetrised,
  :math:`\\tilde p_3(\\xi) = |L|\\,[\\tilde p(\\mu + L\\xi) + \\tilde p(\\mu - L\\xi)]/2`, against
  :math:`g = N(0, I)`: same evidence, matched first three moments;
* the error: the relative mean squared error of Frühwirth-Schnatter (2004, "Estimating marginal likelihoods for
  mixture and Markov switching models using bridge sampling techniques", Econometrics J. 7, eq. 18), as
  ``bridgesampling``'s ``error_measures`` computes it, with the posterior term's autocorrelation from the
  posterior draws' effective sample size (batch means per chain; Micaletto & Vehtari 2025, "Bridge sampling
  diagnostics", arXiv:2508.14487, make this Monte Carlo SE the package's reported one); ``se = sqrt(re2)`` is the SE
  of :math:`\\log\\hat Z` by the delta method.

:func:`bridge_sampling` takes the model's :class:`~pmcbandit.arms.evidence.ModelDensity` and the trace's draws mapped to
its space, ``(chain, draw, dim)``.
"""

from __future__ import annotations

import time

import numpy as np
from scipy.special import logsumexp

__all__ = ["bridge_sampling", "batch_means_ess"]


def batch_means_ess(f: np.ndarray) -> float:
    """Effective size of draws ``(chain, draw)`` of a function by batch means (batches of ``sqrt(draws)``)."""
    chains, n = f.shape
    b = max(int(np.sqrt(n)), 1)
    k = n // b
    if k < 2:
        return float(f.size)
    means = f[:, : k * b].reshape(chains, k, b).mean(axis=2)
    var_batch = b * means.var(ddof=1)
    var = f.var(ddof=1)
    if not var_batch > 0:
        return float(f.size)
    return float(min(f.size, f.size * var / var_batch))


def _log_target(density, x: np.ndarray) -> np.ndarray:
    lp, ll = density.logp_terms_batch(x)
    out = np.asarray(lp, dtype=np.float64) + np.asarray(ll, dtype=np.float64)
    out[~np.isfinite(out)] = -np.inf
    return out


def bridge_sampling(density, draws: np.ndarray, rng: np.random.Generator, method: str = "normal",
                    max_iter: int = 1000) -> dict:
    """``log Z``, its SE (``sqrt`` of the relative MSE) and the seconds taken, from ``draws`` ``(chain, draw, dim)``.

    ``method``: ``"normal"`` (Gronau et al. 2017) or ``"warp3"``; ``rng`` draws the proposal points (as many as the
    iteration's posterior draws).
    """
    start = time.perf_counter()
    chains, n, d = draws.shape
    half = n // 2
    fit = draws[:, :half].reshape(-1, d)
    post = draws[:, half:]
    mu = fit.mean(axis=0)
    chol = np.linalg.cholesky(np.atleast_2d(np.cov(fit, rowvar=False)))
    log_det = float(np.sum(np.log(np.diag(chol))))
    n2 = post.shape[0] * post.shape[1]
    z = rng.standard_normal((n2, d))
    flat_post = post.reshape(-1, d)

    def log_std_normal(u):
        return -0.5 * np.einsum("ij,ij->i", u, u) - 0.5 * d * np.log(2 * np.pi)

    if method == "normal":
        xg = mu + z @ chol.T
        log_g_post = log_std_normal(np.linalg.solve(chol, (flat_post - mu).T).T) - log_det
        log_g_prop = log_std_normal(z) - log_det
        q11, q21 = _log_target(density, flat_post), _log_target(density, xg)
    elif method == "warp3":
        xi = np.linalg.solve(chol, (flat_post - mu).T).T
        q11 = (np.logaddexp(_log_target(density, flat_post), _log_target(density, mu - xi @ chol.T))
               - np.log(2) + log_det)
        q21 = (np.logaddexp(_log_target(density, mu + z @ chol.T), _log_target(density, mu - z @ chol.T))
               - np.log(2) + log_det)
        log_g_post, log_g_prop = log_std_normal(xi), log_std_normal(z)
    else:
        raise ValueError(f"The 'method' parameter of bridge_sampling must be 'normal' or 'warp3'. Got {method!r} "
                         "instead.")
    l1, l2 = q11 - log_g_post, q21 - log_g_prop
    n1 = batch_means_ess(l1.reshape(post.shape[:2]))
    s1, s2 = n1 / (n1 + n2), n2 / (n1 + n2)
    shift = float(np.median(l1))
    a, b = l1 - shift, l2 - shift
    log_r = 0.0
    for _ in range(max_iter):
        num = logsumexp(b - np.logaddexp(np.log(s1) + b, np.log(s2) + log_r)) - np.log(n2)
        den = logsumexp(-np.logaddexp(np.log(s1) + a, np.log(s2) + log_r)) - np.log(flat_post.shape[0])
        new = num - den
        if abs(new - log_r) < 1e-10:
            log_r = new
            break
        log_r = new
    log_z = log_r + shift
    # Fruhwirth-Schnatter (2004) relative MSE, bridgesampling's error_measures, on scaled densities.
    p_post, p_prop = np.exp(q11 - log_z), np.exp(q21 - log_z)
    g_post, g_prop = np.exp(log_g_post), np.exp(log_g_prop)
    f1 = p_prop / (s1 * p_prop + s2 * g_prop)
    f2 = g_post / (s1 * p_post + s2 * g_post)
    ess_f2 = batch_means_ess(f2.reshape(post.shape[:2]))
    re2 = f1.var(ddof=1) / f1.mean() ** 2 / n2 + f2.var(ddof=1) / f2.mean() ** 2 / ess_f2
    return {"log_z": float(log_z), "se": float(np.sqrt(re2)), "seconds": time.perf_counter() - start,
            "method": f"bridge-{method}"}

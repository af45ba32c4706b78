"""Importance arms whose proposals are fitted to posterior draws the user already has (a trace).

The arms are :class:`~pmcbandit.arms.evidence.LaplaceISArm` s (a defensive mixture of multivariate Student-t with a
share of the prior, Hesterberg 1995) whose t components are fitted to the trace's draws on the unconstrained space
instead of to modes:

* ``trace-t`` and ``trace-t20``: one t at the draws' mean and covariance
  (:func:`~pmcbandit.arms.evidence.laplace_is.moment_fit`; the proposal of Gronau et al. 2017, "A tutorial on bridge
  sampling", J. Math. Psych. 81, made Student-t), with the default pool's heavy-tailed and light-tailed settings
  (:data:`~pmcbandit.evidence.importance.DEFAULT_LAPLACE_PROPOSALS`). The covariance is the draws' variances with
  their correlations shrunk towards zero (:func:`shrunk_covariance`): a sample covariance of :math:`n` autocorrelated
  draws in :math:`d` dimensions carries sampling noise in each of its :math:`d(d-1)/2` correlations, and a t on it is
  too narrow in the directions the noise shrinks, which the weights' Pareto :math:`\\hat k` punishes. Where no arm on
  it passes the pool's set-up check (``passes``), the arms on the draws' variances alone (every correlation zero) are
  checked in its place;
* ``trace-mix``: a t mixture over clusters of the draws (k-means on the whitened draws, its centres from at most
  :data:`KMEANS_DRAWS` of them and every draw assigned to its nearest centre, the number of clusters
  :math:`k \\le` :data:`MAX_CLUSTERS` chosen by the BIC of the Gaussian mixture it makes, Schwarz 1978), each
  component at its cluster's mean and covariance and weighted by its cluster's share (the mode weights of
  :class:`~pmcbandit.arms.evidence.LaplaceISArm`, with the floor
  :data:`~pmcbandit.arms.evidence.laplace_is.MODE_WEIGHT_FLOOR`), for a multimodal or multi-scale posterior; left out,
  with a note, when one cluster is best.

The draws only *fit* the proposals, which are fixed before any pull; every pull draws fresh, independent points from
them, so each weight is unbiased for Z and the replicates are i.i.d. whatever the trace (a trace that missed a mode
makes a poor proposal, which its Pareto :math:`\\hat k` shows, and the defensive prior share keeps the weights'
variance finite where the likelihood is bounded). The fit is a fixed function of the draws (seed :data:`FIT_SEED`),
made by :func:`trace_fits`, so the pool can keep it for later runs given the same trace
(:func:`~pmcbandit.arms.evidence._cache.trace_fit_for`).

May import: the arms and the statistics layer; never a door.
"""

from __future__ import annotations

import numpy as np

from typing import NamedTuple

from pmcbandit.arms.base import Arm

__all__ = ["FIT_SEED", "KMEANS_DRAWS", "MAX_CLUSTERS", "TraceFits", "trace_arms", "trace_fits", "cluster_fit",
           "shrunk_covariance"]

#: Seed of the k-means starts of the mixture fit (a fixed function of the trace).
FIT_SEED = 20_170_813
#: Most clusters the mixture arm is fitted with.
MAX_CLUSTERS = 4
#: (df, inflation, defensive) of the mixture arm's components: the heavy-tailed setting.
MIX_PROPOSAL = (5.0, 1.2, 0.1)
_KMEANS_ITERATIONS = 50
#: Most draws the k-means centres are found from (a subsample of the trace, seed :data:`FIT_SEED`): the clusters'
#: shares, means and covariances and the BIC that chooses their number use every draw.
KMEANS_DRAWS = 1000


class TraceFits(NamedTuple):
    """What :func:`trace_fits` fitted to a trace's draws: the moment fit of the ``trace-t`` arms (``None``, with
    ``error`` saying why, when the draws make no t), the clusters of the ``trace-mix`` arm (``None`` when one cluster
    is best or they were not asked for), the number of draws, the shrinkage intensity of the moment fit's
    correlations (:func:`shrunk_covariance`) and the moment fit on the draws' variances alone (``None`` where the
    intensity is 1 already or there is no moment fit).
    """

    moments: object
    error: str
    clusters: object
    n: int
    shrinkage: float = float("nan")
    diagonal: object = None


def trace_fits(x: np.ndarray, clusters: bool = True) -> TraceFits:
    """The proposals' fits to the unconstrained draws ``x`` ``(n, dim)`` (module docstring): a fixed function of
    ``x``; the clusters only where asked for and the moment fit exists.
    """
    from pmcbandit.arms.evidence.laplace_is import moment_fit

    n = x.shape[0]
    mean = x.mean(axis=0)
    try:
        cov, shrinkage = shrunk_covariance(x)
        fit = moment_fit(mean, cov, n, "the trace")
    except ValueError as err:
        return TraceFits(None, str(err), None, n)
    diagonal = None if shrinkage >= 1.0 else moment_fit(mean, np.diag(np.diag(cov)), n, "the trace")
    return TraceFits(fit, "", cluster_fit(x) if clusters else None, n, shrinkage, diagonal)


def shrunk_covariance(x: np.ndarray) -> tuple[np.ndarray, float]:
    """The covariance of draws ``x`` ``(n, d)`` with their correlations :math:`r_{ij}` shrunk towards zero, and the
    shrinkage intensity :math:`\\lambda \\in [0, 1]`: :math:`s_i s_j ((1 - \\lambda) r_{ij} + \\lambda \\delta_{ij})`
    with :math:`s_i` the draws' standard deviations.

    :math:`\\lambda = \\sum_{i \\ne j} \\widehat{\\mathrm{Var}}(r_{ij}) / \\sum_{i \\ne j} r_{ij}^2` (clipped to
    :math:`[0, 1]`) is the intensity of Schäfer & Strimmer 2005 ("A shrinkage approach to large-scale covariance
    matrix estimation", Stat. Appl. Genet. Mol. Biol. 4, Art. 32; their target D: the variances kept, the
    correlations shrunk) that minimises the expected squared error. The draws of a trace are autocorrelated, so the
    sampling variance of each :math:`r_{ij}` comes from batch means (Flegal & Jones 2010, "Batch means and spectral
    variance estimators in Markov chain Monte Carlo", Ann. Statist. 38(2)): :math:`a = \\lfloor n/b \\rfloor`
    consecutive batches of :math:`b = \\lfloor\\sqrt n\\rfloor` draws, the variance of the batches' correlations over
    :math:`a`. A batch in which a coordinate does not move counts a zero correlation for it (the cautious side:
    more shrinkage). One dimension, or no correlation at all: :math:`\\lambda = 1`.
    """
    n, d = x.shape
    cov = np.atleast_2d(np.cov(x, rowvar=False))
    sd = np.sqrt(np.diag(cov))
    if d < 2 or n < 4:
        return cov, 1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        corr = cov / np.outer(sd, sd)
    corr = np.where(np.isfinite(corr), corr, 0.0)
    size = int(np.sqrt(n))
    count = n // size
    first, second = np.zeros((d, d)), np.zeros((d, d))
    for k in range(count):
        with np.errstate(divide="ignore", invalid="ignore"):
            r = np.atleast_2d(np.corrcoef(x[k * size:(k + 1) * size], rowvar=False))
        r = np.where(np.isfinite(r), r, 0.0)
        first += r
        second += r * r
    var = np.maximum(second - first * first / count, 0.0) / (count - 1) / count
    off = ~np.eye(d, dtype=bool)
    total = float(np.sum(corr[off] ** 2))
    shrinkage = 1.0 if total <= 0.0 else float(np.clip(np.sum(var[off]) / total, 0.0, 1.0))
    shrunk = (1.0 - shrinkage) * corr
    np.fill_diagonal(shrunk, 1.0)
    out = sd[:, None] * shrunk * sd[None, :]
    return 0.5 * (out + out.T), shrinkage


def trace_arms(density, x: np.ndarray, proposals, batch_size: int, cost: str, notes: list[str],
               fits: TraceFits | None = None, passes=None) -> list[Arm]:
    """The trace arms (module docstring) on ``density`` fitted to the unconstrained draws ``x`` ``(n, dim)``
    (``fits``: :func:`trace_fits` of ``x``, made here when ``None``); the arms that cannot be fitted are left out with
    a note in ``notes``.

    ``passes(arms, covariance)``, where given, is the pool's set-up check of a set of arms (``covariance``:
    ``"shrunk"`` or ``"diagonal"``, what the ``trace-t`` arms' covariance is): where the arms on the shrunk
    covariance fail it and those on the variances alone pass, the latter are returned.
    """
    if fits is None:
        fits = trace_fits(x, clusters=bool(proposals))
    n = fits.n
    if fits.moments is None:
        notes.append(f"trace-t arms left out: {fits.error} ({n} draws of dimension {density.dim})")
        return []
    arms = _t_arms(density, fits.moments, proposals, batch_size, cost)
    if not arms:
        return arms
    mix = _mix_arm(density, fits, batch_size, cost, notes)
    arms += mix
    if passes is None or fits.diagonal is None or passes(arms, "shrunk"):
        notes.append(f"trace-t arms: the covariance of the trace's {n} draws with their correlations shrunk by "
                     f"{fits.shrinkage:.3g} towards zero (Schäfer & Strimmer 2005)")
        return arms
    diagonal = _t_arms(density, fits.diagonal, proposals, batch_size, cost) + mix
    if passes(diagonal, "diagonal"):
        notes.append("trace-t arms: the variances of the trace's draws alone (no correlation), as no trace arm on "
                     f"their covariance with the correlations shrunk by {fits.shrinkage:.3g} passed the Pareto k-hat "
                     "check on one batch of set-up draws and these did")
        return diagonal
    notes.append(f"trace-t arms: the covariance of the trace's {n} draws with their correlations shrunk by "
                 f"{fits.shrinkage:.3g} towards zero (Schäfer & Strimmer 2005); neither these arms nor those on the "
                 "variances alone passed the Pareto k-hat check on one batch of set-up draws")
    return arms


def _t_arms(density, fit, proposals, batch_size: int, cost: str) -> list[Arm]:
    """The ``trace-t`` arms, one per proposal setting, on the moment fit ``fit``."""
    from pmcbandit.arms.evidence import LaplaceISArm
    from pmcbandit.evidence.importance import arm_name

    return [LaplaceISArm(density, df=df, inflation=inflation, defensive=defensive, batch_size=batch_size,
                         name=arm_name("trace-t", df), modes=fit, cost=cost)
            for df, inflation, defensive in proposals]


def _mix_arm(density, fits: TraceFits, batch_size: int, cost: str, notes: list[str]) -> list[Arm]:
    """The ``trace-mix`` arm on the clusters of ``fits`` (a list of it), or none with a note."""
    from pmcbandit.arms.evidence import LaplaceISArm

    clusters = fits.clusters
    if clusters is None:
        notes.append(f"trace-mix arm left out: the {fits.n} draws make one cluster (BIC of up to {MAX_CLUSTERS} "
                     "clusters)")
        return []
    df, inflation, defensive = MIX_PROPOSAL
    mix = LaplaceISArm(density, df=df, inflation=inflation, defensive=defensive, batch_size=batch_size,
                       name="trace-mix", modes=clusters, cost=cost)
    notes.append(f"trace-mix arm: a t mixture over {len(clusters.modes)} clusters of the trace's {fits.n} draws "
                 f"(shares {', '.join(f'{np.exp(m.log_laplace):.3g}' for m in clusters.modes)})")
    return [mix]


def _nearest(white: np.ndarray, c: np.ndarray) -> np.ndarray:
    """The index of the nearest centre (row of ``c``) to each row of ``white``, one matrix product."""
    return np.argmin(np.einsum("kj,kj->k", c, c)[None, :] - 2.0 * white @ c.T, axis=1)


def _kmeans(white: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """The ``k`` centres of ``white`` by Lloyd's k-means from k-means++ starts (Arthur & Vassilvitskii 2007); squared
    distances as :math:`|x|^2 - 2 x\\cdot c + |c|^2` (the :math:`|x|^2` term, the same for every centre, left out
    of the assignment), one matrix product per step, stopped when at most one draw in 1000 changed cluster (the
    centres of that assignment).
    """
    n = white.shape[0]
    sq = np.einsum("ij,ij->i", white, white)
    centres = [white[rng.integers(n)]]
    d2 = np.full(n, np.inf)
    for _ in range(1, k):
        last = centres[-1]
        d2 = np.minimum(d2, np.maximum(sq - 2.0 * white @ last + last @ last, 0.0))
        centres.append(white[rng.choice(n, p=d2 / d2.sum())] if d2.sum() > 0 else white[rng.integers(n)])
    c = np.array(centres)
    labels = np.zeros(n, dtype=np.intp)
    for step in range(_KMEANS_ITERATIONS):
        new = _nearest(white, c)
        moved = int(np.count_nonzero(new != labels))
        labels = new
        if step > 0 and moved <= n // 1000:
            break
        c = np.array([white[labels == j].mean(axis=0) if np.any(labels == j) else c[j] for j in range(k)])
    return c


def _whiten(x: np.ndarray, mean: np.ndarray, chol: np.ndarray) -> np.ndarray:
    """:math:`L^{-1}(x - \\mu)` for the rows of ``x``, as one product with the (small) inverse factor."""
    return (x - mean) @ np.linalg.inv(chol).T


def _gaussian_fit(x: np.ndarray, labels: np.ndarray, k: int):
    """Per-cluster (share, mean, cov) and the Gaussian mixture's log-likelihood at ``x``; ``None`` when a cluster
    has fewer than ``max(2 * dim, 20)`` draws or a covariance that is not positive definite (its Cholesky factor gives
    each component's log density).
    """
    from scipy.special import logsumexp

    n, d = x.shape
    parts, terms = [], []
    for j in range(k):
        xj = x[labels == j]
        if xj.shape[0] < max(2 * d, 20):
            return None
        mean = xj.mean(axis=0)
        centred = xj - mean
        cov = centred.T @ centred / (xj.shape[0] - 1)
        try:
            chol = np.linalg.cholesky(cov)
        except np.linalg.LinAlgError:
            return None
        z = _whiten(x, mean, chol)
        log_pdf = (-0.5 * np.einsum("ij,ij->i", z, z) - np.sum(np.log(np.diag(chol)))
                   - 0.5 * d * np.log(2.0 * np.pi))
        terms.append(np.log(xj.shape[0] / n) + log_pdf)
        parts.append((xj.shape[0] / n, mean, cov))
    return parts, float(np.sum(logsumexp(np.vstack(terms), axis=0)))


def cluster_fit(x: np.ndarray):
    """A :class:`~pmcbandit.arms.evidence.modes.ModeSearch` of one component per cluster of the draws ``x`` (mean,
    precision, and ``log_laplace`` the log of the cluster's share, so the arm's mode weights are the shares), for the
    number of clusters in ``2..MAX_CLUSTERS`` whose Gaussian mixture has a lower BIC than one Gaussian; ``None`` when
    one cluster is best or no split has enough draws per cluster.
    """
    from pmcbandit.arms.evidence.modes import Mode, ModeSearch

    n, d = x.shape
    one = _gaussian_fit(x, np.zeros(n, dtype=np.intp), 1)
    if one is None:
        return None
    chol = np.linalg.cholesky(one[0][0][2])
    white = _whiten(x, one[0][0][1], chol)
    params = d + d * (d + 1) / 2
    best, best_bic = None, -2.0 * one[1] + params * np.log(n)
    rng = np.random.default_rng(FIT_SEED)
    # The centres from a subsample (a fixed function of the draws); every draw then goes to its nearest centre.
    sub = white if n <= KMEANS_DRAWS else white[np.sort(rng.choice(n, size=KMEANS_DRAWS, replace=False))]
    for k in range(2, MAX_CLUSTERS + 1):
        fit = _gaussian_fit(x, _nearest(white, _kmeans(sub, k, rng)), k)
        if fit is None:
            continue
        bic = -2.0 * fit[1] + (k * params + k - 1) * np.log(n)
        if bic < best_bic:
            best, best_bic = fit[0], bic
    if best is None:
        return None
    modes = []
    for share, mean, cov in sorted(best, key=lambda p: -p[0]):
        precision = np.linalg.inv(cov)
        modes.append(Mode(mean, 0.5 * (precision + precision.T), float("nan"), float(np.log(share))))
    return ModeSearch(tuple(modes), True, f"{len(modes)} clusters of {n} trace draws", 0, 0, len(modes), 0.0)

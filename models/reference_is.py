"""Long importance-sampling runs for reference log evidences, written from a model's compiled density alone.

Multivariate Student-t proposals :math:`q = t_\\nu(m, cS)` (defaults :math:`\\nu = 20`, :math:`c = 1.1`), either
at the Laplace fit (:math:`m` the mode, :math:`S` the inverse negative Hessian; Kass & Raftery 1995, Sec. 4.1;
:func:`laplace_t`) or moment-matched from a pilot run (Oh & Berger 1992; :func:`moment_matched`); weights
:math:`w_i = \\tilde p(x_i)/q(x_i)` (Robert & Casella 2004, Sec. 3.3), sums :math:`S_1=\\sum w_i` and
:math:`S_2=\\sum w_i^2` accumulated in log space (:func:`importance_run`),

.. math::

    \\log\\hat Z = \\log(S_1/N), \\qquad
    \\widehat{\\mathrm{se}} = \\sqrt{\\hat\\rho / N}, \\quad
    \\hat\\rho = N S_2 / S_1^2 - 1

(the delta-method SE of :math:`\\log\\hat Z`; :math:`\\hat\\rho` the relative variance of one weight).
Runs of one proposal pool by summing :math:`S_1, S_2, N` (:func:`pool`). The references of
:mod:`models.pima` and :mod:`models.evidence_suite` were computed this way by ``benchmarks/reference_evidence.py``.
"""

from __future__ import annotations

import time
from typing import NamedTuple

import numpy as np
from scipy.special import gammaln

DF, INFLATION, BATCH = 20.0, 1.1, 50_000


class ISRun(NamedTuple):
    """One long importance-sampling run: log-space sums and what the report needs."""

    log_s1: float
    log_s2: float
    draws: int
    seed: int
    cpu_seconds: float
    khat: float

    @property
    def rel_var(self) -> float:
        """:math:`\\hat\\rho = N S_2/S_1^2 - 1`, the relative variance of one weight."""
        return max(float(np.exp(np.log(self.draws) + self.log_s2 - 2.0 * self.log_s1)) - 1.0, 0.0)

    @property
    def log_z(self) -> float:
        return float(self.log_s1 - np.log(self.draws))

    @property
    def se(self) -> float:
        return float(np.sqrt(self.rel_var / self.draws))


def pool(runs) -> ISRun:
    """Pool runs of one proposal by summing their :math:`S_1`, :math:`S_2` and draw counts."""
    return ISRun(
        float(np.logaddexp.reduce([r.log_s1 for r in runs])),
        float(np.logaddexp.reduce([r.log_s2 for r in runs])),
        sum(r.draws for r in runs), -1, sum(r.cpu_seconds for r in runs), max(r.khat for r in runs),
    )


class StudentT:
    """A multivariate Student-t proposal :math:`t_\\nu(m, S)` for a compiled batch log density.

    A draw is :math:`x = m + Lz\\sqrt{\\nu/u}`, :math:`z\\sim N(0,I)`,
    :math:`u\\sim\\chi^2_\\nu`, :math:`LL^\\top = S`, whose Mahalanobis radius is
    :math:`r^2 = |z|^2\\nu/u`, and

    .. math::

        \\log q(x) = \\log\\Gamma(\\tfrac{\\nu+d}{2}) - \\log\\Gamma(\\tfrac{\\nu}{2})
        - \\tfrac d2\\log(\\nu\\pi) - \\tfrac12\\log|S| - \\tfrac{\\nu+d}{2}\\log(1 + r^2/\\nu).
    """

    def __init__(self, logp, location, scale, df: float):
        self.logp, self.location, self.df = logp, np.asarray(location, dtype=np.float64), float(df)
        self.dim = self.location.size
        self.chol = np.linalg.cholesky(0.5 * (scale + scale.T))
        d, log_det = self.dim, 2.0 * float(np.sum(np.log(np.diag(self.chol))))
        self.log_q0 = float(gammaln(0.5 * (df + d)) - gammaln(0.5 * df) - 0.5 * d * np.log(df * np.pi) - 0.5 * log_det)

    def draw(self, rng: np.random.Generator, size: int) -> tuple[np.ndarray, np.ndarray]:
        """``(x, log p~(x) - log q(x))`` for ``size`` draws; NaN or ``+inf`` raise ``FloatingPointError``."""
        z = rng.standard_normal((size, self.dim))
        s2 = self.df / rng.chisquare(self.df, size)
        # einsum, not BLAS: a thin (size x d) BLAS product starts spinning worker threads.
        x = self.location + np.einsum("ij,kj->ik", z, self.chol) * np.sqrt(s2)[:, None]
        r2 = np.einsum("ij,ij->i", z, z) * s2
        log_q = self.log_q0 - 0.5 * (self.df + self.dim) * np.log1p(r2 / self.df)
        lw = np.asarray(self.logp(x), dtype=np.float64) - log_q
        if np.isnan(lw).any() or np.isposinf(lw).any():
            raise FloatingPointError("a log importance weight is NaN or +inf")
        return x, lw

    def log_weights(self, rng: np.random.Generator, size: int) -> np.ndarray:
        return self.draw(rng, size)[1]


def laplace_t(model, df: float = DF, inflation: float = INFLATION) -> StudentT:
    """:math:`t_\\nu(\\hat x, cP^{-1})` at the Laplace fit of ``model`` (Kass & Raftery 1995, Sec. 4.1).

    :math:`\\hat x, P` from :meth:`ModelDensity.laplace` (strict: a model without an
    interior mode is refused); the batch log density from
    :meth:`ModelDensity.compile_logp_batch` (PyTensor's C backend).
    """
    from pmcbandit.arms.evidence.model_density import ModelDensity

    density = ModelDensity(model)
    mode, precision = density.laplace()
    eigval, eigvec = np.linalg.eigh(precision)
    return StudentT(density.compile_logp_batch(), mode, inflation * (eigvec / eigval) @ eigvec.T, df)


def moment_matched(pilot: StudentT, seed: int, draws: int, df: float = DF,
                   inflation: float = INFLATION) -> tuple[StudentT, float]:
    """``(t_nu(mean, c cov), pilot ESS)`` with the posterior moments estimated from ``pilot``.

    Self-normalised importance-sampling moments of ``draws`` pilot draws
    (:math:`\\bar w_i = w_i/\\sum_j w_j`, :math:`m = \\sum_i \\bar w_i x_i`,
    :math:`C = \\sum_i \\bar w_i (x_i-m)(x_i-m)^\\top`; adaptive importance sampling,
    Oh & Berger 1992), ESS :math:`1/\\sum_i\\bar w_i^2`. The pilot draws are discarded: given
    the proposal, later weights are independent and unbiased for :math:`Z`.
    """
    rng = np.random.default_rng(seed)
    xs, lws = zip(*(pilot.draw(rng, min(BATCH, draws - i)) for i in range(0, draws, BATCH)))
    x, lw = np.concatenate(xs), np.concatenate(lws)
    w = np.exp(lw - lw.max())
    w /= w.sum()
    mean = w @ x
    cov = (x - mean).T @ ((x - mean) * w[:, None])
    return StudentT(pilot.logp, mean, inflation * cov, df), float(1.0 / np.sum(w**2))


def importance_run(proposal: StudentT, seed: int, draws: int, batch: int = BATCH) -> ISRun:
    """``draws`` weights from ``numpy.random.default_rng(seed)``, in batches, sums in log space.

    :math:`\\hat k` is the Pareto shape of the first (up to) :math:`10^6` weights
    (:func:`pmcbandit.stats.psis.pareto_khat`, ArviZ 0.x's ``psislw`` rule; Vehtari et al. 2024): the variance
    estimate is trusted below 0.7.
    """
    from pmcbandit.stats.psis import pareto_khat

    rng = np.random.default_rng(seed)
    log_s1 = log_s2 = -np.inf
    n, head = 0, []
    start = time.process_time()
    while n < draws:
        lw = proposal.log_weights(rng, min(batch, draws - n))
        log_s1 = np.logaddexp(log_s1, np.logaddexp.reduce(lw))
        log_s2 = np.logaddexp(log_s2, np.logaddexp.reduce(2.0 * lw))
        if n < 1_000_000:
            head.append(lw)
        n += lw.size
    cpu = time.process_time() - start
    lw = np.concatenate(head)[:1_000_000]
    khat = pareto_khat(lw)
    return ISRun(float(log_s1), float(log_s2), n, seed, cpu, khat)

"""The prior importance-sampling arm: :math:`\\hat Z = L(\\theta)`, :math:`\\theta \\sim p`.

The simplest unbiased evidence estimator (e.g. Kass & Raftery 1995, Sec. 4.3):
with the prior as the proposal the importance weight is the likelihood,
:math:`Z = E_{p}[L(\\theta)]`. It is AIS with a single increment
(:class:`~pmcbandit.arms.evidence.ais.AISArm` with ``n_steps=1`` returns the same
values from the same ``Generator``), efficient only when the posterior is close
to the prior (small data sets); the bandit learns that from its variance.
"""

from __future__ import annotations

import time

import numpy as np

from pmcbandit._validation import check_choice, check_positive
from pmcbandit.arms.base import Arm
from pmcbandit.stats.posterior_check import weighted_loglik
from pmcbandit.arms.evidence._draws import DrawReservoir, keep_draws
from pmcbandit.arms.evidence.model_density import ModelDensity

__all__ = ["PriorISArm"]


class PriorISArm(Arm):
    """Prior importance sampling of the evidence of a PyMC model.

    Parameters
    ----------
    model : pymc.Model or ModelDensity
        See :class:`~pmcbandit.arms.evidence.model_density.ModelDensity`.
    batch_size : int
        Prior draws per pull.
    cost : {"cpu_seconds", "logp_evals"}
        Measured CPU seconds, or the number of density evaluations (``batch_size``).
    name : str
        Defaults to ``"prior-is"``.

    Notes
    -----
    ``values[b] = loglik(x_b)`` with :math:`x_b` exact prior draws in the
    unconstrained space: logs of unbiased estimates of :math:`Z`
    (``log_scale = True``). A draw outside the likelihood's support has value
    ``-inf`` (weight zero), and so has a draw outside the float range (the rule of
    :meth:`~pmcbandit.arms.evidence.model_density.ModelDensity.outside_float_range`). Diagnostics:
    ``logp_evals``, ``log_w_var`` (variance of the finite log weights; NaN with fewer than two) and
    ``outside_float_range`` (draws given weight 0 by that rule). ``expected_seconds`` is the
    measured wall time of one draw at construction (after a first, compiling one).
    """

    log_scale = True
    diagnostics = ("logp_evals", "log_w_var", "outside_float_range", "post_loglik", "post_loglik_sd")
    family = "importance"
    importance_weights = True
    thread_safe = False  # the density's prior sampler reseeds shared random states per call

    def __init__(self, model, batch_size: int = 1000, cost: str = "cpu_seconds", name: str = "prior-is"):
        self.batch_size = int(check_positive(batch_size, "batch_size", "PriorISArm", integer=True))
        self.cost = check_choice(cost, ("cpu_seconds", "logp_evals"), "cost", "PriorISArm")
        self.cost_unit = "logp_evals" if self.cost == "logp_evals" else "cpu_seconds"
        self.density = model if isinstance(model, ModelDensity) else ModelDensity(model)
        self.name = str(name)
        # One untimed draw compiles everything; the next one, timed, predicts a pull's duration.
        self.draw(np.random.default_rng(0))
        start = time.perf_counter()
        self.draw(np.random.default_rng(1))
        self.expected_seconds = time.perf_counter() - start
        self.draw_store = DrawReservoir()  # the timing pulls' draws are not the run's

    def draw(self, rng: np.random.Generator):
        x = self.density.sample_prior(rng, self.batch_size)
        _, log_w = self.density.logp_terms_batch(x)
        lost = self.density.outside_float_range(x)
        log_w[lost] = -np.inf
        if np.isnan(log_w).any():
            raise FloatingPointError(
                f"arm {self.name!r} produced a NaN log weight: the model's log likelihood is NaN "
                "at a prior draw."
            )
        keep_draws(self, rng, x, log_w)  # posterior draws as a by-product (_draws; a child stream)
        finite = log_w[np.isfinite(log_w)]
        info = {
            "logp_evals": float(self.batch_size),
            "log_w_var": float(np.var(finite)) if finite.size > 1 else float("nan"),
            "outside_float_range": float(lost.sum()),
            **weighted_loglik(log_w, log_w),  # a prior draw's weight is its likelihood
        }
        return log_w, info, (float(self.batch_size) if self.cost == "logp_evals" else None)

"""Nested-sampling peers of the evidence suite: runners of dynesty and nautilus on the likelihoods and prior
transforms of :mod:`models.evidence_suite_peers`.

Runners, each timed from the call to the answer (building the problem and the sampler included)
and stopped at ``seconds`` of wall time:

:func:`run_dynesty`
    ``dynesty.NestedSampler(loglike, prior_transform, ndim, rstate=default_rng(seed))`` with its
    defaults (500 live points, ``bound="multi"``, ``sample="auto"``), driven step by step through
    :meth:`~dynesty.NestedSampler.sample` with ``run_nested``'s default stopping rule
    (``dlogz = 1e-3 (nlive - 1) + 0.01``); at the deadline the loop stops, the live points are added
    and the integrals recomputed as ``run_nested`` does. Estimate ``logz[-1]``, its error bar
    ``logzerr[-1]`` (Skilling 2006's information-based variance, as dynesty reports it).
:func:`run_nautilus`
    ``nautilus.Sampler(prior_transform, loglike, n_dim, vectorized=True, seed=seed)`` (defaults
    otherwise: 2000 live points, 4 networks), ``run(timeout=seconds - setup)``. Estimate
    ``sampler.log_z``; error bar ``1 / sqrt(sampler.n_eff)``, the importance-sampling rule for the
    relative error of :math:`\\hat Z` that nautilus's evidence is built on (Lange 2023, Sec. 3; the
    same rule as cosmosis's nautilus interface). nautilus checks its timeout between batches of
    likelihood calls, so a neural-network fit in flight can overshoot; a new bound predicted to end
    past the deadline is skipped (:func:`_deadline_sampler`), the first neural one cannot be predicted.

Both take the suite model's ``name``, or a :class:`~models.evidence_suite_peers.PeerProblem` as ``spec`` for a
target of another benchmark. A run stopped by the clock reports ``status="deadline"`` (its interval still counts, as
a user would read it), one that met its own stopping rule ``status="ok"``.
"""

from __future__ import annotations

import time

import numpy as np

from models.evidence_suite_peers import problem

__all__ = ["run_dynesty", "run_nautilus", "PEER_METHODS"]

PEER_METHODS = ("dynesty", "nautilus")


def _finite(value) -> float:
    value = float(value)
    return value if np.isfinite(value) else float("nan")


def run_dynesty(name: str, seconds: float, seed: int, spec=None) -> dict:
    """dynesty's static sampler with its defaults, stopped at ``seconds`` of wall time from the call."""
    import dynesty
    from dynesty.utils import compute_integrals

    start = time.perf_counter()
    spec = problem(name) if spec is None else spec

    def loglike(x):
        return float(spec.log_likelihood(x))

    sampler = dynesty.NestedSampler(loglike, spec.prior_transform, spec.dim, rstate=np.random.default_rng(seed))
    setup = time.perf_counter() - start
    dlogz = 1e-3 * (sampler.nlive - 1.0) + 0.01  # run_nested's default with the live points added
    status = "ok"
    for _ in sampler.sample(dlogz=dlogz):
        if time.perf_counter() - start >= seconds:
            status = "deadline"
            break
    for _ in sampler.add_live_points():
        pass
    saved = sampler.saved_run
    logwt, logz, logzvar, h = compute_integrals(logl=np.asarray(saved["logl"]), logvol=np.asarray(saved["logvol"]))
    log_z, log_z_se = _finite(logz[-1]), _finite(np.sqrt(max(logzvar[-1], 0.0)))
    return dict(log_z=log_z, log_z_se=log_z_se, ci=[log_z - 1.96 * log_z_se, log_z + 1.96 * log_z_se],
                status=status, setup=setup, wall=time.perf_counter() - start, calls=int(sampler.ncall),
                iterations=int(sampler.it))


def _deadline_sampler(deadline: float):
    """A ``nautilus.Sampler`` that does not start a new bound it would not finish by ``deadline``.

    nautilus checks ``run(timeout=...)`` between batches of likelihood calls; a bound (its neural
    networks trained on all points so far) can take longer than the rest of the budget. This
    subclass times every bound and skips one whose predicted duration (the last one's, x 1.5)
    would end past ``deadline`` (a ``time.perf_counter()`` reading); sampling goes on from the bounds
    it has until the timeout stops it. The first bound (the unit cube) is always built, and so is
    the first neural one, which has no duration to predict from: it can still overshoot.
    """
    from nautilus import Sampler

    class DeadlineSampler(Sampler):
        last_bound_seconds = 0.0
        skipped_bounds = 0

        def add_bound(self, *args, **kwargs):
            left = deadline - time.perf_counter()
            if self.bounds and 1.5 * self.last_bound_seconds > left:
                self.skipped_bounds += 1
                return False
            neural, begin = bool(self.bounds), time.perf_counter()
            out = super().add_bound(*args, **kwargs)
            if neural:  # a neural bound, accepted or not
                self.last_bound_seconds = time.perf_counter() - begin
            return out

    return DeadlineSampler


def run_nautilus(name: str, seconds: float, seed: int, spec=None) -> dict:
    """nautilus with its defaults (vectorised likelihood), ``run(timeout=...)`` to end at ``seconds`` from the call;
    a new bound that would end past the deadline is skipped (:func:`_deadline_sampler`)."""
    start = time.perf_counter()
    spec = problem(name) if spec is None else spec
    sampler = _deadline_sampler(start + seconds)(spec.prior_transform, spec.log_likelihood, n_dim=spec.dim,
                                                  vectorized=True, pass_dict=False, seed=seed)
    setup = time.perf_counter() - start
    finished = sampler.run(timeout=max(seconds - setup, 0.0), verbose=False)
    log_z = _finite(sampler.log_z) if sampler.log_z is not None else float("nan")
    n_eff = float(sampler.n_eff)
    log_z_se = float(1.0 / np.sqrt(n_eff)) if n_eff > 0 else float("nan")
    return dict(log_z=log_z, log_z_se=log_z_se, ci=[log_z - 1.96 * log_z_se, log_z + 1.96 * log_z_se],
                status="ok" if finished else "deadline", setup=setup, wall=time.perf_counter() - start,
                calls=int(sampler.n_like), n_eff=n_eff, bounds=len(sampler.bounds),
                skipped_bounds=int(sampler.skipped_bounds))

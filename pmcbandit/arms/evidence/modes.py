"""Posterior modes of a PyMC model on the unconstrained space: Newton searches from many starts.

A Laplace-centred importance proposal is only as good as the modes it is centred on.
:func:`find_modes` runs the trust-region Newton search of :func:`search_mode` from the
model's initial point and from exact prior draws, keeps the end points that are interior
modes (stationary, with a well-conditioned positive-definite negative Hessian), merges
those that are one mode in the Hessian metric, and ranks them by their Laplace evidence

.. math::

    \\log \\hat Z_j = \\log\\tilde p(\\hat x_j) + \\tfrac d2 \\log 2\\pi - \\tfrac12 \\log|P_j|,
    \\qquad P_j = -\\nabla^2 \\log\\tilde p(\\hat x_j)

(Kass & Raftery 1995, "Bayes factors", JASA 90, Sec. 4.1). It also says when the
posterior has *no* interior mode, so that no Laplace proposal should be built: every
search runs off (a centred hierarchical model, whose density grows without bound as a
group scale goes to zero: the "funnel" of Neal 2003, "Slice sampling", Ann. Statist. 31),
or a search that did not stop at an interior mode climbed higher than the best one that did.
"""

from __future__ import annotations

import time
from typing import NamedTuple

import numpy as np

from pmcbandit._validation import check_positive

__all__ = [
    "DEFAULT_SEED",
    "MAX_CONDITION",
    "MAX_ITER",
    "MERGE_DISTANCE",
    "RUNAWAY_PATIENCE",
    "Mode",
    "ModeSearch",
    "NoInteriorModeError",
    "SearchEnd",
    "find_modes",
    "local_mode",
    "search_mode",
]

#: Seed of the prior draws that start the searches when no ``rng`` is given (no global state).
DEFAULT_SEED = 1995
#: Largest condition number of the Jacobi-scaled precision of an interior mode.
MAX_CONDITION = 1e10
#: Two modes are one when their squared Mahalanobis distance is below this under both precisions.
MERGE_DISTANCE = 1.0


#: Iteration limit of each Newton search of :func:`find_modes`.
MAX_ITER = 200
#: Searches in a row ending non-stationary, with no interior mode found, after which
#: :func:`find_modes` stops (a funnel).
RUNAWAY_PATIENCE = 4


class SearchEnd(NamedTuple):
    """Where one Newton search of ``logprior + beta * loglik`` ended, and in what state.

    ``stationary`` is the rule of :meth:`ModelDensity.laplace
    <pmcbandit.arms.evidence.model_density.ModelDensity.laplace>`: the optimiser reports
    success or :math:`\\max|\\nabla\\log\\pi_\\beta| \\le 10^{-6}\\max(1, |\\log\\pi_\\beta|)`.
    ``condition`` is the condition number of the Jacobi-scaled precision
    :math:`D^{-1/2} P D^{-1/2}`, :math:`D = \\mathrm{diag}(P)` (``inf`` unless ``P`` is
    positive definite), which does not depend on the units of the coordinates and is
    within a factor ``dim`` of the best diagonal scaling (van der Sluis 1969, "Condition
    numbers and equilibration of matrices", Numer. Math. 14).
    """

    location: np.ndarray
    log_density: float
    precision: np.ndarray
    grad_max: float
    stationary: bool
    positive_definite: bool
    condition: float
    x_max: float
    start_finite: bool
    finite: bool
    message: str
    n_iter: int


class Mode(NamedTuple):
    """An interior mode: location, precision (negative Hessian), log density, Laplace log evidence."""

    location: np.ndarray
    precision: np.ndarray
    log_density: float
    log_laplace: float


class ModeSearch(NamedTuple):
    """What :func:`find_modes` found.

    Attributes
    ----------
    modes : tuple of Mode
        The distinct interior modes, highest Laplace evidence first (may be non-empty
        when ``interior`` is ``False``: they are then not to be trusted alone).
    interior : bool
        Whether a Laplace proposal over ``modes`` is safe to build (see :func:`find_modes`).
    reason : str
        Why ``interior`` is what it is, in words.
    n_starts, n_converged, n_distinct : int
        Starts tried, starts that ended at an interior mode, distinct modes.
    seconds : float
        Wall seconds of the search (compiling the gradient and Hessian excluded).
    timed_out : bool
        Whether ``max_seconds`` of :func:`find_modes` ended the search before all its starts ran.
    """

    modes: tuple
    interior: bool
    reason: str
    n_starts: int
    n_converged: int
    n_distinct: int
    seconds: float
    timed_out: bool = False


class NoInteriorModeError(ValueError):
    """The posterior has no interior mode a Laplace proposal could be centred on.

    Attributes
    ----------
    reason : str
        What the mode search saw (:attr:`ModeSearch.reason`).
    """

    def __init__(self, reason: str):
        super().__init__(f"The posterior has no interior mode for a Laplace proposal: {reason}")
        self.reason = reason


def search_mode(density, beta: float = 1.0, x0=None, *, max_iter: int = MAX_ITER) -> SearchEnd:
    """Trust-region Newton search for a mode of :math:`\\log\\pi_\\beta = \\log p + \\beta \\log L`.

    ``scipy.optimize.minimize(method="trust-exact")`` with the exact compiled Hessian
    (Nocedal & Wright 2006, Alg. 4.1 and Sec. 4.3), quadratically convergent near a
    mode; L-BFGS-B takes over if a Hessian on the way is not finite. Points where
    :math:`\\log\\pi_\\beta` is NaN or infinite count as outside the support. Nothing is
    raised for a degenerate end point: the state is returned (:class:`SearchEnd`), and
    :meth:`ModelDensity.laplace` and :func:`find_modes` apply their rules to it.

    Parameters
    ----------
    density : ModelDensity
    beta : float
        Inverse temperature (1: the posterior, 0: the prior).
    x0 : array_like of shape (dim,), optional
        Start; the model's initial point by default (the density's ``initial_x``, read when it was compiled).
    max_iter : int
        Iteration limit of the Newton search.

    Raises
    ------
    ValueError
        If ``x0`` does not have shape ``(dim,)``.
    """
    from scipy.optimize import minimize

    value_and_grad, hessian = density._laplace_functions()
    beta = float(beta)

    def objective(x):
        f, g = value_and_grad(x, beta)
        if not np.isfinite(f):
            return np.inf, np.zeros_like(x)
        return -float(f), -np.asarray(g, dtype=np.float64)

    def neg_hessian(x):
        return -np.asarray(hessian(x, beta), dtype=np.float64)

    x0 = density.initial_x.copy() if x0 is None else np.asarray(x0, dtype=np.float64)
    if x0.shape != (density.dim,):
        raise ValueError(
            f"The 'x0' parameter of search_mode must have shape ({density.dim},). "
            f"Got shape {x0.shape} instead."
        )
    with np.errstate(all="ignore"):
        if not np.isfinite(objective(x0)[0]):
            nan = np.full((density.dim, density.dim), np.nan)
            return SearchEnd(x0, -np.inf, nan, np.nan, False, False, np.inf, float(np.max(np.abs(x0))),
                             False, False, "the log density is not finite at the start", 0)
        newton = True
        try:
            res = minimize(objective, x0, jac=True, hess=neg_hessian, method="trust-exact",
                           options={"gtol": 1e-8, "maxiter": int(max_iter)})
        except (ValueError, np.linalg.LinAlgError, UnboundLocalError):
            newton = False
            # trust-exact's subproblem cannot use a non-finite Hessian (SciPy 1.18 can also fail there with an
            # UnboundLocalError on a Hessian of the funnel's kind); L-BFGS-B needs none.
            res = minimize(objective, x0, jac=True, method="L-BFGS-B", options={"maxiter": int(max_iter)})
        x = np.asarray(res.x, dtype=np.float64)
        value, grad = objective(x)
        precision = neg_hessian(x)
    value = -float(value)
    precision = 0.5 * (precision + precision.T)
    finite = bool(np.isfinite(value) and np.all(np.isfinite(x)) and np.all(np.isfinite(precision)))
    grad_max = float(np.max(np.abs(grad))) if finite else np.nan
    # trust-exact can stop with "failure to predict improvement" at a point already
    # stationary to rounding; only a non-stationary end point lacks a mode. L-BFGS-B's success
    # (a relative reduction of f below its tolerance) says nothing about the gradient: there
    # only the gradient counts.
    stationary = finite and bool((res.success and newton) or grad_max <= 1e-6 * max(1.0, abs(value)))
    positive_definite, condition = False, np.inf
    if finite:
        positive_definite = bool(np.linalg.eigvalsh(precision).min() > 0.0)
        if positive_definite:
            d = 1.0 / np.sqrt(np.diag(precision))
            scaled = np.linalg.eigvalsh(precision * d[:, None] * d[None, :])
            condition = float(scaled.max() / scaled.min()) if scaled.min() > 0 else np.inf
    return SearchEnd(x, value, precision, grad_max, stationary, positive_definite, condition,
                     float(np.max(np.abs(x))), True, finite, str(res.message), int(getattr(res, "nit", 0)))


def _laplace_log_evidence(log_density: float, precision: np.ndarray) -> float:
    d = precision.shape[0]
    return float(log_density + 0.5 * d * np.log(2.0 * np.pi) - 0.5 * np.linalg.slogdet(precision)[1])


def _merge(candidates, merge_distance):
    """Interior end points merged in the Hessian metric, the highest log density kept."""
    kept = []
    for end in sorted(candidates, key=lambda e: -e.log_density):
        same = False
        for other in kept:
            delta = end.location - other.location
            if max(delta @ end.precision @ delta, delta @ other.precision @ delta) < merge_distance:
                same = True
                break
        if not same:
            kept.append(end)
    modes = []
    for end in kept:
        location, precision = end.location.copy(), end.precision.copy()
        location.setflags(write=False)
        precision.setflags(write=False)
        modes.append(Mode(location, precision, end.log_density, _laplace_log_evidence(end.log_density, precision)))
    return tuple(sorted(modes, key=lambda m: -m.log_laplace))


def _kind(end: SearchEnd, max_condition: float) -> str:
    if not end.start_finite:
        return "non-finite start"
    if not end.finite:
        return "non-finite end"
    if not end.stationary:
        return "non-stationary"
    if not end.positive_definite:
        return "not positive definite"
    if end.condition > max_condition:
        return "ill-conditioned"
    return "interior"


def _describe(ends, kinds) -> str:
    parts = []
    for kind in ("non-stationary", "not positive definite", "ill-conditioned", "non-finite end", "non-finite start"):
        group = [e for e, k in zip(ends, kinds) if k == kind]
        if not group:
            continue
        text = f"{len(group)} {kind}"
        if kind == "non-stationary":
            text += (f" (largest |x| {max(e.x_max for e in group):.3g}, "
                     f"largest max|gradient| {max(e.grad_max for e in group):.3g})")
        elif kind == "ill-conditioned":
            text += f" (condition numbers up to {max(e.condition for e in group):.3g})"
        parts.append(text)
    return ", ".join(parts)


def find_modes(
    density,
    n_starts: int = 16,
    rng: np.random.Generator | None = None,
    *,
    max_condition: float = MAX_CONDITION,
    merge_distance: float = MERGE_DISTANCE,
    max_iter: int = MAX_ITER,
    max_seconds: float | None = None,
) -> ModeSearch:
    """Multi-start search for the distinct interior posterior modes of a model.

    Starts: the model's initial point, then ``n_starts - 1`` exact prior draws
    (:meth:`ModelDensity.sample_prior`) from ``rng``. Each start runs
    :func:`search_mode` at ``beta = 1``. An end point is an *interior mode* when it is
    stationary (the rule of :class:`SearchEnd`) and its precision :math:`P` is positive
    definite with Jacobi-scaled condition number at most ``max_condition``. Two interior
    modes are one when

    .. math:: \\max\\bigl(\\delta^\\top P_i\\,\\delta,\\ \\delta^\\top P_j\\,\\delta\\bigr)
              < \\texttt{merge\\_distance}, \\qquad \\delta = \\hat x_i - \\hat x_j,

    i.e. their centres lie within one Laplace standard deviation of each other (by
    default) in both metrics (searches that converge to one mode end ~1e-4 standard
    deviations apart or less, by the stationarity rule); the higher one is kept.

    ``interior`` is ``False`` (with a ``reason``) when no start ends at an interior
    mode, or when an end point that is not an interior mode (non-stationary: the search
    ran towards a boundary of the unconstrained space, as down a funnel; or stationary
    with an indefinite or ill-conditioned Hessian) has a log density higher than the
    best interior mode's by more than :math:`10^{-6}\\max(1, |\\log\\tilde p|)`: the
    modes found are then not where the posterior mass is.

    Parameters
    ----------
    density : ModelDensity
    n_starts : int, default 16
        Number of searches (the initial point and ``n_starts - 1`` prior draws).
    rng : numpy.random.Generator, optional
        Stream of the prior-drawn starts; ``numpy.random.default_rng(DEFAULT_SEED)``
        (:data:`DEFAULT_SEED` = 1995) by default, so the result is reproducible and no
        global state is used.
    max_condition : float, default 1e10
        Limit on the condition number of :math:`D^{-1/2} P D^{-1/2}`: beyond it a
        direction's curvature is within ~1e-10 of the largest, close to the rounding of
        an autodiff Hessian summed over many terms, and a Laplace proposal along it is
        meaningless.
    merge_distance : float, default 1.0
        Squared Mahalanobis distance below which two modes are one.
    max_iter : int, default 200
        Iteration limit of each search (Newton with exact Hessians reaches an interior mode in
        tens of iterations; a search still moving after ``max_iter`` is non-stationary).
    max_seconds : float, optional
        Wall seconds after which no further search starts (the one from the initial point always
        runs; a search under way is finished); ``timed_out`` and ``reason`` then say how many of the
        ``n_starts`` ran. A timed pool passes a share of its budget
        (:data:`pmcbandit.evidence.pool.MODE_SEARCH_SHARE`): on a model of a hundred dimensions a search
        costs tens of Hessians, and sixteen of them can take more of a short budget than the Laplace
        arms repay. ``None`` (default): every start runs.

    Returns
    -------
    ModeSearch

    Notes
    -----
    The search stops early, with ``interior`` ``False``, when no interior mode has been found and
    the last :data:`RUNAWAY_PATIENCE` searches all ended non-stationary (ran towards a boundary,
    as down a funnel): the remaining starts, drawn from the same prior, would cost as much each
    and, on such a posterior, end the same way. The starts are drawn in full first, so the stream
    of ``rng`` is consumed alike either way.

    Cost: ``n_starts`` Newton searches, each a few to ~100 evaluations of the compiled
    value, gradient and Hessian (a search down a funnel runs longest), plus the one-off
    compilation of the gradient and Hessian; :attr:`ModeSearch.seconds` reports it, and
    ``benchmarks/results/bench_evidence_suite.md`` the whole set-up of a pool per model.
    """
    door = "find_modes"
    # Read by what a ModelDensity offers (its compiled Laplace functions and exact prior draws): the
    # density's module builds on this one.
    if not all(callable(getattr(density, name, None)) for name in ("_laplace_functions", "sample_prior")):
        raise TypeError(
            f"The 'density' parameter of {door} must be a ModelDensity. Got {density!r} instead."
        )
    n_starts = int(check_positive(n_starts, "n_starts", door, integer=True))
    if rng is None:
        rng = np.random.default_rng(DEFAULT_SEED)
    elif not isinstance(rng, np.random.Generator):
        raise TypeError(
            f"The 'rng' parameter of {door} must be a numpy.random.Generator or None. Got {rng!r} instead."
        )
    max_condition = float(check_positive(max_condition, "max_condition", door))
    if max_condition < 1.0:
        raise ValueError(
            f"The 'max_condition' parameter of {door} must be >= 1. Got {max_condition!r} instead."
        )
    merge_distance = float(check_positive(merge_distance, "merge_distance", door))
    max_iter = int(check_positive(max_iter, "max_iter", door, integer=True))
    if max_seconds is not None:
        max_seconds = float(check_positive(max_seconds, "max_seconds", door))

    density._laplace_functions()  # compiled once per density, outside the timed search
    start_time = time.perf_counter()
    starts = [None] + list(density.sample_prior(rng, n_starts - 1)) if n_starts > 1 else [None]
    ends, kinds = [], []
    timed_out = False
    for i, x0 in enumerate(starts):
        if i and max_seconds is not None and time.perf_counter() - start_time >= max_seconds:
            timed_out = True
            break
        ends.append(search_mode(density, 1.0, x0, max_iter=max_iter))
        kinds.append(_kind(ends[-1], max_condition))
        if "interior" not in kinds and kinds[-RUNAWAY_PATIENCE:] == ["non-stationary"] * RUNAWAY_PATIENCE:
            break  # a funnel: the remaining starts would run off too (RUNAWAY_PATIENCE)
    candidates = [e for e, k in zip(ends, kinds) if k == "interior"]
    modes = _merge(candidates, merge_distance)
    n = len(ends)
    interior, reason = True, ""
    if not modes:
        interior = False
        reason = f"none of {n} Newton searches ended at an interior mode: {_describe(ends, kinds)}"
        if n < len(starts) and not timed_out:
            reason += (f" (the search stopped after {RUNAWAY_PATIENCE} starts in a row ran towards a boundary, "
                       f"of {len(starts)})")
    else:
        best = max(m.log_density for m in modes)
        margin = 1e-6 * max(1.0, abs(best))
        above = [(e, k) for e, k in zip(ends, kinds) if k != "interior" and e.finite and e.log_density > best + margin]
        if above:
            end, kind = max(above, key=lambda ek: ek[0].log_density)
            interior = False
            reason = (
                f"{len(above)} of {n} Newton searches ended above the best interior mode's log density "
                f"{best:.6g} without reaching an interior mode (highest: {kind}, log density "
                f"{end.log_density:.6g}, |x| up to {end.x_max:.3g}); the density grows towards a boundary "
                "of the unconstrained space (as in a funnel) or a singularity, or peaks where its Hessian "
                "is degenerate"
            )
        else:
            others = _describe(ends, kinds)
            reason = (f"{len(modes)} distinct interior mode(s) from {n} Newton searches "
                      f"({len(candidates)} converged" + (f"; {others}" if others else "") + ")")
    if timed_out:
        reason += f" (the {n} of {len(starts)} starts that ran within {max_seconds:.3g} s)"
    return ModeSearch(modes, interior, reason, n, len(candidates), len(modes), time.perf_counter() - start_time,
                      timed_out)


def local_mode(density, x0, *, max_iter: int = MAX_ITER, max_condition: float = MAX_CONDITION) -> ModeSearch:
    """One Newton search (:func:`search_mode`, ``beta = 1``) from ``x0``, read by :func:`find_modes`' rule: a
    :class:`ModeSearch` of the one mode it ended at where that is an interior mode (stationary, positive definite,
    Jacobi-scaled condition number at most ``max_condition``), ``interior`` ``False`` with the reason otherwise.

    A local search: it finds the mode of the basin ``x0`` lies in, and says nothing of other modes or of a density
    that grows towards a boundary elsewhere (what :func:`find_modes`' many starts check). ``max_iter`` bounds its
    cost: at most ``max_iter`` Hessians (``2 * dim`` gradient evaluations each, :meth:`ModelDensity._laplace_functions
    <pmcbandit.arms.evidence.model_density.ModelDensity._laplace_functions>`); a search still moving after them
    ends non-stationary, hence not interior.
    """
    start_time = time.perf_counter()
    end = search_mode(density, 1.0, x0, max_iter=max_iter)
    kind = _kind(end, max_condition)
    seconds = time.perf_counter() - start_time
    if kind != "interior":
        return ModeSearch((), False, f"the Newton search ended {_describe([end], [kind])} after {end.n_iter} "
                          f"iterations (at most {max_iter})", 1, 0, 0, seconds)
    return ModeSearch(_merge([end], MERGE_DISTANCE), True, f"one interior mode after {end.n_iter} Newton iterations",
                      1, 1, 1, seconds)

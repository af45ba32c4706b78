r"""``pmcbandit.identify``: find the K arms with the largest means, with confidence 1 - delta.

The flow mirrors :func:`pmcbandit.run`: validate and freeze the arguments
(:class:`~pmcbandit.runtime.config.RunConfig`, ``kind="identification"``), wrap the algorithm in an
:class:`~pmcbandit.policies.learner.IdentifierLearner`, and drive the one loop (:func:`pmcbandit.runtime.loop.drive`),
which checks the algorithm's ``stop`` after every decision and ends the run with
``stopped_by="confidence"`` when it holds; the budget stays a cap (``"budget"``: the answer is then
the algorithm's best guess, without its guarantee).

The algorithms' guarantees need i.i.d. rewards with a known sub-Gaussian scale :math:`\sigma`
(Jiang, Li & Qiao 2017, Sec. 2): pass ``sigma``, or ``bounds=(a, b)`` (rewards in ``[a, b]`` are
:math:`(b-a)/2`-sub-Gaussian; an observation outside is a fault). An arm's observation is its pull's
batch mean.

Faults (documented rule). A faulty pull contributes nothing, and the algorithm pulls its arm again
when it needs to: a leading arm that fails now and then stays in the race, and the run warns with
each such arm's failure rate (:mod:`pmcbandit.runtime.faults`). An arm quarantined after
``max_faults`` faults (default :data:`DEFAULT_MAX_FAULTS`, which tolerates rare faults, not an arm
that keeps failing) ends the run with ``stopped_by="no_arm"`` and *nothing selected*: an arm that
cannot be pulled any more leaves every selection unfounded, and a silent wrong answer (the best of
the arms left) is what the rule avoids. :func:`pmcbandit.compare_samplers` ends the same way when
no arm is left.
"""

from __future__ import annotations

import numbers
import os
from collections.abc import Callable, Mapping, Sequence

from pmcbandit._validation import check_k, check_open_unit, check_positive
from pmcbandit.arms.base import Arm, check_arms
from pmcbandit.identification import SETTINGS, Identifier, get_identifier
from pmcbandit.identification.learner import IdentifierLearner
from pmcbandit.identification.result import IdentificationResult
from pmcbandit.runtime.budget import Budget, Pulls
from pmcbandit.runtime.door import drive_run, emit_warnings, loop_options

__all__ = ["identify"]

#: Default cap on the pulls of an identification run.
DEFAULT_BUDGET = Pulls(1_000_000)
#: Default faults after which an arm is quarantined (and the run ends, module docstring): rare faults
#: of an arm are tolerated and reported; an arm failing this often is not measured at all.
DEFAULT_MAX_FAULTS = 10


def identify(
    arms: Sequence[Arm],
    algorithm="lil_rand_lucb",
    *,
    k: int = 1,
    delta: float = 0.05,
    budget: float | Budget = DEFAULT_BUDGET,
    random_seed=None,
    bounds: tuple[float, float] | None = None,
    sigma: float | None = None,
    mode: str | None = None,
    epsilon: float | None = None,
    algorithm_kwargs: dict | None = None,
    max_faults: int = DEFAULT_MAX_FAULTS,
    max_in_flight: int | None = None,
    pull_timeout: float | None = None,
    executor=None,
    progressbar: bool = True,
    callback: Callable | None = None,
    checkpoint: str | os.PathLike | None = None,
    checkpoint_every: float = 30.0,
) -> IdentificationResult:
    r"""Identify the ``k`` arms with the largest means; wrong with probability at most ``delta``.

    Parameters
    ----------
    arms : sequence of Arm
        Linear-scale arms (unique names); each pull's observation is its batch mean.
    algorithm : str or Identifier
        One of :data:`pmcbandit.identification.IDENTIFIER_NAMES`, built with the settings it
        declares (:data:`pmcbandit.identification.SETTINGS`: ``k``, ``delta``, ``sigma``, ``mode``,
        ``epsilon``, the width of ``bounds``) and ``algorithm_kwargs``; or a ready
        :class:`~pmcbandit.identification.Identifier`, which carries its own ``k``, ``delta`` and
        scale (the arguments here are then not used).
    k : int
        How many arms to identify (``1 <= k < len(arms)``; lil'UCB: 1).
    delta : float
        Target error probability in (0, 1).
    budget : float or Budget
        A cap: the run stops earlier when the algorithm is confident. A float is wall seconds.
    random_seed : int, Generator or None
        As in :func:`pmcbandit.run` (the algorithm's draws and every pull get their own streams).
    bounds : (a, b), optional
        Known range of the observations (rewards outside are faults). The EXPLORE-m algorithms
        (``direct``, ``incremental``, ``halving``, ``adapt``, ``ocba_m``, ``racing``) require it
        (their bounds use the width ``b - a``); for the others it sets ``sigma = (b - a) / 2`` when
        ``sigma`` is not given.
    sigma : float, optional
        Sub-Gaussian scale of the observations (the LUCB family and lil'UCB). One of ``bounds``
        and ``sigma`` is required for them.
    mode : {"faithful", "heuristic"}, optional
        The LIL algorithms' parameterisation (:mod:`pmcbandit.identification.radii`; ``None``:
        ``"faithful"``). An algorithm without modes (LUCB1 and the EXPLORE-m algorithms) refuses it.
    epsilon : float, optional
        The LIL's epsilon for Jiang et al.'s algorithms (faithful only); the tolerance of
        :math:`(\epsilon, k)`-optimality for the EXPLORE-m algorithms (required by ``direct``,
        ``incremental`` and ``halving``; 0 by default for ``adapt`` and ``ocba_m``), below the width
        ``b - a`` of ``bounds`` (at or above it every selection is :math:`(\epsilon, k)`-optimal). An
        algorithm without one (LUCB1, RACING) refuses it.
    algorithm_kwargs : dict, optional
        More parameters of the algorithm's factory (e.g. ``{"oracle": ...}`` for lil'CLUCB).
    max_faults : int
        Faults after which an arm is quarantined and the run ends with nothing selected (module
        docstring); default :data:`DEFAULT_MAX_FAULTS`.
    max_in_flight, pull_timeout, executor, progressbar, callback, checkpoint, checkpoint_every
        As in :func:`pmcbandit.run` (``executor``: ``None``, ``"threads"``, ``"processes"``, a Dask
        ``Client`` or an executor object; ``docs/scale_out.md``).

    Returns
    -------
    IdentificationResult
        ``selected`` (arm names, best first), per-arm counts, means and confidence bounds at the
        stop, ``stopped_by``, ``samples``, ``summary()``, ``to_inference_data()``.

    Examples
    --------
    >>> import pmcbandit as pb
    >>> arms = [pb.CallableArm(lambda rng, m=m: rng.normal(m, 0.5), name=f"mu{m}", cost=1.0) for m in (0.0, 0.5, 1.0)]
    >>> res = pb.identify(arms, "lil_rand_lucb", k=1, delta=0.05, sigma=0.5, random_seed=1, progressbar=False)
    >>> res.selected, res.stopped_by
    (['mu1.0'], 'confidence')
    """
    door = "identify"
    arms = check_arms(arms, door)
    if arms[0].log_scale:
        raise ValueError(
            f"The 'arms' parameter of {door} must hold linear-scale arms (identification compares means of "
            f"observations). Got log-scale arms {[a.name for a in arms]!r} instead."
        )
    options = loop_options(door, budget=budget, random_seed=random_seed, max_faults=max_faults,
                           max_in_flight=max_in_flight, pull_timeout=pull_timeout, executor=executor,
                           progressbar=progressbar, callback=callback, checkpoint=checkpoint,
                           checkpoint_every=checkpoint_every)
    bounds = check_bounds(bounds, door)
    check_k(k, len(arms), door)
    delta = check_open_unit(delta, "delta", door)
    if sigma is not None:
        check_positive(sigma, "sigma", door)
    algo = _build(algorithm, k, delta, sigma, bounds, mode, epsilon, algorithm_kwargs, door)
    learner = IdentifierLearner(algo, len(arms))
    config = dict(kind="identification", policy=algo.name, policy_params=tuple(algo.params), k=algo.k,
                  delta=algo.delta)
    done = drive_run(door, arms, learner, random_seed, options, config=config, bounds=bounds)
    lower, upper = algo.confidence(learner.state)
    report = algo.report(learner.state) if algo.report is not None else {}
    result = IdentificationResult(
        arm_names=[a.name for a in arms], history=done.engine.history,
        settings=dict(done.settings, stopped_by=done.stopped_by, algorithm_report=report),
        selected_indices=[] if done.stopped_by == "no_arm" else algo.recommend(learner.state), lower=lower, upper=upper,
        quarantined=done.engine.quarantined.copy(), state=learner.state,
    )
    emit_warnings(result)
    return result


def check_bounds(bounds, door: str):
    """``bounds`` as finite ``(a, b)`` floats with ``a < b`` (``None`` stays ``None``)."""
    if bounds is None:
        return None
    try:
        lo, hi = (float(b) for b in bounds)
    except (TypeError, ValueError):
        raise ValueError(
            f"The 'bounds' parameter of {door} must be (a, b) with a < b. Got {bounds!r} instead."
        ) from None
    if not (lo < hi and lo > -float("inf") and hi < float("inf")):
        raise ValueError(f"The 'bounds' parameter of {door} must be finite (a, b) with a < b. Got {bounds!r} instead.")
    return (lo, hi)


def _build(algorithm, k, delta, sigma, bounds, mode, epsilon, extra, door) -> Identifier:
    """The named algorithm built with the settings it declares (:data:`~pmcbandit.identification.SETTINGS`)."""
    if extra is not None and not isinstance(extra, Mapping):
        raise TypeError(f"The 'algorithm_kwargs' parameter of {door} must be a dict or None. Got {extra!r} instead.")
    extra = dict(extra or {})
    if isinstance(algorithm, Identifier):  # a ready Identifier carries its own k, delta and scale
        if extra:
            raise ValueError(
                f"The 'algorithm_kwargs' parameter of {door} must be empty for a ready Identifier. "
                f"Got {extra!r} instead."
            )
        return algorithm
    if isinstance(algorithm, str) and algorithm in SETTINGS:
        wanted = SETTINGS[algorithm]
        if "k" not in wanted and k != 1:
            raise ValueError(
                f"The 'k' parameter of {door} must be 1 for {algorithm} (best arm only). Got {k!r} instead."
            )
        if epsilon is not None and "epsilon" not in wanted:
            raise ValueError(
                f"The 'epsilon' parameter of {door} must be None for {algorithm!r}, which has no "
                f"tolerance. Got {epsilon!r} instead."
            )
        if mode is not None and "mode" not in wanted:
            raise ValueError(
                f"The 'mode' parameter of {door} must be None for {algorithm!r}, which has no "
                f"modes. Got {mode!r} instead."
            )
        if (
            epsilon is not None
            and "reward_range" in wanted
            and bounds is not None
            and not isinstance(epsilon, bool)
            and isinstance(epsilon, numbers.Real)
            and epsilon >= bounds[1] - bounds[0]
        ):
            raise ValueError(
                f"The 'epsilon' parameter of {door} must be < {bounds[1] - bounds[0]!r} (the width of "
                f"'bounds') for {algorithm!r}: at or above it every selection is (epsilon, k)-optimal. "
                f"Got {epsilon!r} instead."
            )
        if "reward_range" in wanted and bounds is None:
            raise ValueError(
                f"The 'bounds' parameter of {door} must be given for {algorithm!r}: its bounds use the "
                "width of the rewards' range. Got bounds=None instead."
            )
        if "sigma" in wanted:
            if sigma is None:
                if bounds is None:
                    raise ValueError(
                        f"The 'sigma' parameter of {door} must be given (the rewards' sub-Gaussian scale) when "
                        "'bounds' is not. Got sigma=None and bounds=None instead."
                    )
                sigma = (bounds[1] - bounds[0]) / 2.0
            check_positive(sigma, "sigma", door)
        available = dict(
            k=k,
            delta=delta,
            sigma=sigma,
            mode=mode,
            epsilon=epsilon,
            reward_range=None if bounds is None else bounds[1] - bounds[0],
        )
        params = {
            name: available[name] for name in wanted if not (name in ("epsilon", "mode") and available[name] is None)
        }
        params.update(extra)
        return get_identifier(algorithm, door=door, **params)
    return get_identifier(algorithm, door=door, **extra)  # an unknown name or type: the lookup's error names it

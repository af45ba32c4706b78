"""The importance-sampling arms of the default evidence pool: Laplace-t arms over a mode search, pilot-t arms over the
HMC pilot's or the posterior pilot's moments, a scale-mix arm over both where their scales differ, and the set-up
check that says whether an importance arm's weights pass.

:func:`pmcbandit.evidence.pool.evidence_arms` decides which of them a pool gets and when (its ``laplace``,
``laplace_proposals``, ``pilot_is`` and ``refine`` rules); this module builds them. Each proposal is fixed before any
pull (at the mode, refined on set-up draws of a fixed seed, or at the pilot's moments), so every pull's weights stay
unbiased (:class:`~pmcbandit.arms.evidence.LaplaceISArm`).

May import: the arms, the statistics layer and the arms' model-level cache; never a door.
"""

from __future__ import annotations

import numpy as np

from pmcbandit.arms.base import Arm
from pmcbandit.arms.evidence._cache import refined_for

__all__ = ["DEFAULT_LAPLACE_PROPOSALS", "arm_name", "SETUP_CHECK_SEED", "REFINE_SEED", "PilotCheck",
           "check_proposals", "laplace_arms", "setup_weights", "setup_check_passes", "pilot_arms", "SCALE_MIX_RATIO",
           "scale_mix_arms", "LADDER_MAX_RATIO", "LADDER_MAX_DIM", "LADDER_PRIOR_DRAWS", "LADDER_SEED",
           "ladder_scales", "scale_ladder_arms"]

# (df, inflation, defensive share) of the Laplace-centred Student-t arms: a robust one (heavy tails,
# 10 % of the draws from the prior) and an efficient one (light tails, 2 %) that wins on
# near-Gaussian posteriors; the defensive share wastes that fraction of the draws, so it
# multiplies E[w^2] by up to 1/(1 - alpha) (LaplaceISArm).
DEFAULT_LAPLACE_PROPOSALS = ((5.0, 1.2, 0.1), (20.0, 1.1, 0.02))
#: Seed of the draws of the importance arms' set-up k-hat check (:func:`setup_check_passes`): a fixed function of the
#: model.
SETUP_CHECK_SEED = 20_171_101
#: Seed of the set-up draws that refine the Laplace arms' proposal (:func:`laplace_arms`' ``refine``).
REFINE_SEED = 20_171_102


def arm_name(prefix: str, df: float) -> str:
    """``laplace-t`` / ``pilot-t`` for the robust proposal (df 5), ``laplace-t20`` / ``pilot-t20`` for the others."""
    return prefix if df == 5.0 else f"{prefix}{df:g}"


def check_proposals(proposals) -> list[tuple[float, float, float]]:
    """``laplace_proposals`` as (df, inflation, defensive) floats with distinct df (they name the arms)."""
    try:
        pairs = [(float(p[0]), float(p[1]), float(p[2]) if len(p) == 3 else 0.1) for p in proposals]
        if any(len(p) not in (2, 3) for p in proposals):
            raise ValueError
    except (TypeError, ValueError, IndexError):
        raise TypeError(
            "The 'laplace_proposals' parameter of evidence_arms must be a sequence of (df, inflation) or "
            f"(df, inflation, defensive) tuples of numbers. Got {proposals!r} instead."
        ) from None
    dfs = [df for df, _, _ in pairs]
    if len(set(dfs)) != len(dfs):
        raise ValueError(
            "The 'laplace_proposals' parameter of evidence_arms must have distinct df values "
            f"(they name the arms). Got {proposals!r} instead."
        )
    return pairs


def laplace_arms(density, search, proposals, batch_size, cost, notes: list[str], refine: bool = True) -> list[Arm]:
    """The Laplace-t arms over one mode search (:class:`~pmcbandit.arms.evidence.modes.ModeSearch`), or none with a
    note saying why (no interior mode); with ``refine``, their t moved to the weighted moments where that helps
    (:mod:`~pmcbandit.arms.evidence.refine`, seed :data:`REFINE_SEED`). The refinement of a search cut short by its
    time is not kept for later calls on the model; a full search's is.
    """
    from pmcbandit.arms.evidence import LaplaceISArm
    from pmcbandit.arms.evidence.modes import NoInteriorModeError
    from pmcbandit.arms.evidence.refine import refine_proposal

    try:
        arms = [LaplaceISArm(density, df=df, inflation=inflation, defensive=defensive, batch_size=batch_size,
                             name=arm_name("laplace-t", df), modes=search, cost=cost)
                for df, inflation, defensive in proposals]
    except NoInteriorModeError as err:
        notes.append(f"Laplace importance-sampling arms left out: {err.reason}")
        return []
    if not refine or not arms:
        return arms
    done = (refine_proposal(arms[0], np.random.default_rng(REFINE_SEED)) if search.timed_out
            else refined_for(density, arms[0], refine_proposal, REFINE_SEED))
    if done.modes is None:
        return arms
    fractions = " -> ".join(f"{f:.3g}" for f in done.ess_fractions)
    notes.append(f"Laplace arms' t moved to the importance-weighted posterior moments of {done.draws} set-up draws "
                 f"(effective-sample fraction of each proposal tried: {fractions}; {done.reason}; "
                 "evidence_arms(model, refine=False) keeps the Laplace fit)")
    return [arm.with_modes(done.modes) for arm in arms]


def setup_weights(arm) -> np.ndarray | None:
    """One batch of ``arm``'s log weights at set-up (seed :data:`SETUP_CHECK_SEED`) where they pass the Pareto k-hat
    check (:func:`~pmcbandit.stats.psis.khat_threshold`); ``None`` where they do not (NaN or +inf weights included).
    """
    from pmcbandit.stats.psis import khat_threshold, pareto_khat

    try:
        log_w = arm.log_weights(np.random.default_rng(SETUP_CHECK_SEED), arm.batch_size)
        return log_w if pareto_khat(log_w) <= khat_threshold(log_w.size) else None
    except (FloatingPointError, ValueError):
        return None


def setup_check_passes(arms) -> bool:
    """Whether one batch of draws of one of the importance ``arms`` (Laplace-t or pilot-t) at set-up passes the
    Pareto k-hat check (:func:`setup_weights`).
    """
    return any(setup_weights(arm) is not None for arm in arms)


def pilot_arms(density, pilot, proposals, batch_size, cost, notes: list[str], source: str = "the HMC pilot"
               ) -> list[Arm]:
    """One importance-sampling arm per proposal, its t at a pilot's posterior moments
    (:func:`~pmcbandit.arms.evidence.laplace_is.moment_fit`; ``pilot`` an
    :class:`~pmcbandit.arms.evidence.ais.HMCPilot` or a
    :class:`~pmcbandit.arms.evidence.posterior_pilot.PosteriorPilot`, named ``source`` in the notes), or none with
    a note when they do not make a t.
    """
    from pmcbandit.arms.evidence import LaplaceISArm
    from pmcbandit.arms.evidence.laplace_is import moment_fit

    try:
        fit = moment_fit(pilot.posterior_mean, pilot.posterior_cov, pilot.n_draws, source)
    except ValueError as err:
        notes.append(f"pilot-t arms left out: {err}")
        return []
    return [LaplaceISArm(density, df=df, inflation=inflation, defensive=defensive, batch_size=batch_size,
                         name=arm_name("pilot-t", df), modes=fit, cost=cost)
            for df, inflation, defensive in proposals]


#: Geometric mean of the ratio of standard deviations between the Laplace fit and the pilot's moments above which the
#: pool adds the ``scale-mix`` arm (:func:`scale_mix_arms`).
SCALE_MIX_RATIO = 2.0


def scale_mix_arms(density, laplace, pilots, proposals, batch_size, cost, notes: list[str]) -> list[Arm]:
    r"""A ``scale-mix`` arm: one t mixture over the Laplace arms' modes and the pilot-t arms' moment fit, half the
    proposal's mass each, where the two set-up fits see the posterior at very different scales (the geometric mean
    of their standard deviations' ratio, :math:`\exp(|\log\det P_L - \log\det P_\pi| / 2d)` for precisions
    :math:`P`, above :data:`SCALE_MIX_RATIO`); none otherwise.

    A narrow component the mode search centred on (a spike) and a wide one the posterior pilot's draws sat in (a
    slab) are both posterior mass, and each importance arm over one of them never draws the other's points, so
    its Pareto :math:`\hat k` can pass while it misses that mass (Skilling 2006, Sec. 7, for such likelihoods). The
    mixture draws from both. Both fits are fixed before any pull, so its weights stay unbiased for Z, as those of
    every :class:`~pmcbandit.arms.evidence.LaplaceISArm` (the mixture and defensive share of Hesterberg 1995).
    Concentric components of different scales are not what a k-means split of draws separates
    (:func:`~pmcbandit.evidence.trace_arms.cluster_fit` splits by location), hence the rule on the two fits' scales.
    ``laplace`` and ``pilots``: the pool's Laplace-t and pilot-t arms; the first of ``proposals`` sets the t.
    """
    import math

    from pmcbandit.arms.evidence import LaplaceISArm
    from pmcbandit.arms.evidence.modes import Mode, ModeSearch

    if not (laplace and pilots and proposals):
        return []
    found, fit = laplace[0].modes.modes, pilots[0].modes.modes[0]
    dim = fit.location.size
    gap = abs(np.linalg.slogdet(found[0].precision)[1] - np.linalg.slogdet(fit.precision)[1]) / (2.0 * dim)
    if not gap > math.log(SCALE_MIX_RATIO):
        return []
    log_z = np.array([m.log_laplace for m in found])
    share = (np.exp(log_z - np.logaddexp.reduce(log_z)) if np.isfinite(log_z).all()
             else np.full(len(found), 1.0 / len(found)))
    modes = tuple(Mode(m.location, m.precision, m.log_density, math.log(0.5 * p)) for m, p in zip(found, share))
    modes += (Mode(fit.location, fit.precision, fit.log_density, math.log(0.5)),)
    search = ModeSearch(modes, True, "the Laplace modes and the pilot's moments", 0, 0, len(modes), 0.0)
    df, inflation, defensive = proposals[0]
    notes.append(f"scale-mix arm: a t mixture over the Laplace fit and the pilot's moments, whose standard deviations "
                 f"differ by a factor of {math.exp(gap):.3g} (geometric mean over the {dim} coordinates)")
    return [LaplaceISArm(density, df=df, inflation=inflation, defensive=defensive, batch_size=batch_size,
                         name="scale-mix", modes=search, cost=cost)]


#: Widest component of the ``scale-ladder`` arm, as a factor on the Laplace fit's scale (:func:`scale_ladder_arms`).
LADDER_MAX_RATIO = 1000.0
#: Largest dimension at which the pool tries a ``scale-ladder`` arm (its components' densities cost
#: :math:`O(d^2)` each per draw, and their number grows as :math:`\sqrt d`).
LADDER_MAX_DIM = 30
#: Prior draws whose covariance sets the ladder's widest scale (seed :data:`LADDER_SEED`).
LADDER_PRIOR_DRAWS = 1000
#: Seed of the ladder's prior draws and of its set-up batch: a fixed function of the model.
LADDER_SEED = 20_171_103


def ladder_scales(ratio: float, dim: int) -> np.ndarray:
    r"""The ladder's scale factors: geometric from 1 to ``ratio`` (capped at :data:`LADDER_MAX_RATIO`), with
    :math:`1 + \lceil \sqrt d \log R \rceil` rungs. Two Gaussians of the same shape whose scales differ by a factor
    :math:`1 + \epsilon` have importance weights of relative variance about :math:`e^{2 d \epsilon^2} - 1`, so the
    rungs' spacing falls as :math:`1/\sqrt d` for any concentric component between two rungs to be met within a
    bounded factor; the t components' tails (df of the robust Laplace proposal) smooth the rest.
    """
    import math

    top = math.log(min(max(ratio, 1.0), LADDER_MAX_RATIO))
    n = 1 + max(1, math.ceil(math.sqrt(dim) * top))
    return np.exp(np.linspace(0.0, top, n))


def scale_ladder_arms(density, laplace, proposals, batch_size, cost, notes: list[str]) -> list[Arm]:
    r"""A ``scale-ladder`` arm: a t mixture at the Laplace arms' modes whose components widen the Laplace fit by the
    factors of :func:`ladder_scales`, from 1 to the prior's scale; kept only where one batch of its draws at set-up
    (seed :data:`LADDER_SEED`) shows the Laplace arms' set-up estimate too low
    (:func:`~pmcbandit.stats.missed_mass.log_evidence_against` over its weights reaches :math:`\log(1/\alpha)`, against
    the largest upper limit of the set-up batches, at seed :data:`SETUP_CHECK_SEED`, of the Laplace arms whose weights
    pass the Pareto :math:`\hat k` check) and its own weights pass that check; none otherwise, and none where no Laplace
    arm passes (the pilot-t and ``scale-mix`` arms are the pool's remedy there, :func:`scale_mix_arms`).

    A narrow component at the mode (a spike) inside a wide one around it (a slab) holds posterior mass that a
    proposal shaped by the curvature at the mode never draws, and whose weights therefore pass :math:`\hat k` while
    their mean reads the spike alone (Skilling 2006, Sec. 7, for such likelihoods); nor does a posterior pilot started
    at the mode reach the slab. The ladder draws at every scale between the mode's and the prior's, so its weights
    find that mass where it lies; the test at set-up keeps it only where they do, and its proposal is fixed before any
    pull, so its weights stay unbiased for :math:`Z` (the mixture and defensive share of Hesterberg 1995). Left out
    above :data:`LADDER_MAX_DIM` dimensions and where the prior is no wider than the Laplace fit (by
    :data:`SCALE_MIX_RATIO`). ``laplace``: the pool's Laplace-t arms; the first of ``proposals`` sets the t and the
    smallest defensive share the prior's.
    """
    import math

    from pmcbandit.arms.evidence import LaplaceISArm
    from pmcbandit.arms.evidence.modes import Mode, ModeSearch
    from pmcbandit.stats.missed_mass import ALPHA, UPPER_Z, log_evidence_against
    from pmcbandit.stats.psis import khat_threshold, pareto_khat

    if not (laplace and proposals) or density.dim > LADDER_MAX_DIM:
        return []
    found = laplace[0].modes.modes
    dim = density.dim
    prior = density.sample_prior(np.random.default_rng(LADDER_SEED), LADDER_PRIOR_DRAWS)
    prior = prior[np.isfinite(prior).all(axis=1)]
    if prior.shape[0] <= dim:
        return []
    sign, log_det = np.linalg.slogdet(np.atleast_2d(np.cov(prior.T)))
    ratio = math.exp((log_det + np.linalg.slogdet(found[0].precision)[1]) / (2.0 * dim)) if sign > 0 else math.nan
    if not ratio > SCALE_MIX_RATIO:
        return []
    # Only Laplace arms whose set-up weights pass the k-hat check make a claim to test; where none does, the pool's
    # pilot-t and scale-mix arms are the remedy (evidence_arms' pilot_is rule).
    others = [w for w in map(setup_weights, laplace) if w is not None]
    if not others:
        return []
    scales = ladder_scales(ratio, dim)
    log_z = np.array([m.log_laplace for m in found])
    share = (np.exp(log_z - np.logaddexp.reduce(log_z)) if np.isfinite(log_z).all()
             else np.full(len(found), 1.0 / len(found)))
    modes = tuple(Mode(m.location, m.precision / c**2, m.log_density, math.log(p / scales.size))
                  for m, p in zip(found, share) for c in scales)
    search = ModeSearch(modes, True, "the Laplace modes widened by a ladder of scales", 0, 0, len(modes), 0.0)
    df = proposals[0][0]
    defensive = min(p[2] for p in proposals)
    arm = LaplaceISArm(density, df=df, inflation=1.0, defensive=defensive, batch_size=batch_size, name="scale-ladder",
                       modes=search, cost=cost)
    try:
        log_w = arm.log_weights(np.random.default_rng(LADDER_SEED), arm.batch_size)
    except (FloatingPointError, ValueError):
        return []
    shift = max(float(np.max(log_w)), *(float(np.max(w)) for w in others))
    if not np.isfinite(shift) or not pareto_khat(log_w) <= khat_threshold(log_w.size):
        return []
    upper = max(float(np.mean(w) + UPPER_Z * np.std(w, ddof=1) / math.sqrt(w.size))
                for w in (np.exp(o - shift) for o in others))
    evidence = log_evidence_against(np.exp(log_w - shift), upper)
    if not evidence >= math.log(1.0 / ALPHA):
        return []
    notes.append(f"scale-ladder arm: a t mixture at the Laplace modes over {scales.size} scales from 1 to "
                 f"{scales[-1]:.3g} times the Laplace fit's (the prior's), as its set-up draws show the Laplace arms' "
                 f"set-up estimate too low (log evidence {evidence:.3g} against {math.log(1.0 / ALPHA):.3g}): a part "
                 "of the posterior wider than the curvature at the mode says")
    return [arm]


class PilotCheck:
    """The pilot-t arms on a posterior pilot's moments and whether they pass the set-up k-hat check
    (:func:`~pmcbandit.evidence.importance.setup_check_passes`), kept for the moments checked last: the pilot calls it
    as its ``enough`` while drawing, and the pool reads the arms and verdict of the moments the pilot ended with
    without building or checking them again.
    """

    def __init__(self, density, proposals, batch_size, cost):
        self.density, self.build = density, (proposals, batch_size, cost)
        self.pilot, self.arms, self.passed = None, [], False

    def arms_for(self, pilot, notes: list[str]) -> tuple[list[Arm], bool]:
        """The pilot-t arms on ``pilot``'s moments and their verdict (:func:`pilot_arms` notes why none, in
        ``notes``, when they are built here).
        """
        if pilot is not self.pilot:
            self.pilot, self.arms = pilot, pilot_arms(self.density, pilot, *self.build, notes, "the posterior pilot")
            self.passed = setup_check_passes(self.arms)
        return self.arms, self.passed

    def __call__(self, pilot) -> bool:
        """Whether the pilot-t arms on ``pilot``'s moments pass the set-up check."""
        return self.arms_for(pilot, [])[1]

"""The policy protocol and the pieces every allocation policy shares.

A policy is a few pure functions over an immutable :class:`BanditState`
(after BlackJAX's kernels)::

    state = policy.init(n_arms)
    arm = policy.select(rng, state)          # choose the next arm
    state = add_pending(state, arm)          # the run loop: a pull is in flight
    state = policy.update(rng, state, arm, reward, cost)   # the pull came back

``reward`` is the paper's non-positive reward: ``-(X - c)^2`` for the
uniform-cost reduction (Neufeld et al. 2014, Thm 2) or the paired cost-aware
``-1/4 (D1 + D2)(X1 - X2)^2`` (Sec. 5); see :mod:`pmcbandit.policies.rewards`. Policies
written for rewards in ``[0, 1]`` see the *normalised* reward
``r = 1 - loss / scale`` with ``loss = -reward`` (App. B and footnote 1: a
constant shift does not change the regret). ``scale`` is either fixed at
``init`` (known ranges, as in the synthetic experiments) or the running maximum
of the observed losses; because the state keeps per-arm sums of losses and
squared losses, the normalised mean and variance of an arm are recomputed under
the current scale at every decision, so an increase of the range applies to past
rewards as well.

Ranges are *shared* (one scale for all arms, the running maximum over all of
them) or *per arm* (App. B, "a better option is to scale each variable
separately"): arm ``k`` is normalised by its own running maximum loss ``s_k``,
the policy computes its index ``B_k`` (an upper bound on the mean of
``1 - loss/s_k``) or Thompson draw as before, and the value compared across arms
is mapped back to the loss scale, :math:`B'_k = s_k (B_k - 1)`, an upper bound
on ``-E[loss_k]``. With a shared scale the map is monotone and is skipped. Per
arm ranges matter when one arm's losses are far larger than another's (prior
importance sampling beside a Laplace proposal, a heavy-tailed drift beside a
good one): under a shared scale the good arms' normalised rewards all sit near 1
and their confidence widths, set by the worst arm's range, hide the differences
between them.

Index policies only supply a vectorised ``index(n, mean, var, t, params)``
(numba-compiled; the replicated-run simulator calls the same function), and
:func:`argmax_random` is the one argmax, breaking ties uniformly at random.
Pending pulls count towards an arm's sample size in the index (a pull in flight
will be an observation), so a policy can choose while earlier pulls are pending
without sending every worker to the same arm.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import ClassVar, NamedTuple, Protocol

import numba
import numpy as np

from pmcbandit.base import new_tuple as _new

from pmcbandit.policies.centring import recentred_scale

__all__ = [
    "BanditState",
    "PolicyExtra",
    "Policy",
    "init_state",
    "add_pending",
    "record_loss",
    "normalised_moments",
    "to_loss_scale",
    "grown_scale",
    "raise_range",
    "recentre_state",
    "argmax_random",
    "index_policy",
]


class PolicyExtra(Protocol):
    """A policy's own immutable statistics, kept in :attr:`BanditState.extra`: a NamedTuple that
    declares which of its fields are per-arm arrays (``per_arm_fields``), so that the run loop can
    show the policy only the arms still in play (:meth:`restrict`) without guessing from shapes.
    """

    per_arm_fields: ClassVar[tuple[str, ...]]

    def _replace(self, **fields) -> "PolicyExtra": ...


def restrict(state: "BanditState", idx: np.ndarray) -> "BanditState":
    """The state a policy sees when only the arms ``idx`` may be chosen: every per-arm array of the
    shared statistics and the fields ``state.extra`` declares per arm, indexed by ``idx``.
    """
    extra = state.extra
    if extra is not None:
        extra = extra._replace(**{f: getattr(extra, f)[idx] for f in extra.per_arm_fields})
    return BanditState(state.n[idx], state.pending[idx], state.loss_sum[idx], state.loss_sq_sum[idx],
                       state.cost_sum[idx], state.scale[idx], state.fixed_scale, state.t, extra, state.per_arm)


class BanditState(NamedTuple):
    """Per-arm sufficient statistics shared by every policy.

    Attributes
    ----------
    n : ndarray of int64, shape (K,)
        Rewards received per arm.
    pending : ndarray of int64, shape (K,)
        Decisions dispatched whose reward has not come back.
    loss_sum, loss_sq_sum : ndarray of float64, shape (K,)
        Sums of ``loss = -reward`` and of its square.
    cost_sum : ndarray of float64, shape (K,)
        Total cost of the decisions that came back.
    scale : ndarray of float64, shape (K,)
        Normaliser of each arm's losses (``r = 1 - loss/scale[k]``); 0 until the first loss.
        All entries are equal unless ``per_arm``.
    fixed_scale : bool
        ``True`` when ``scale`` was given at ``init`` and never changes.
    t : int
        Decisions made so far (dispatched, whether or not they came back).
    extra : PolicyExtra or None
        Policy-specific immutable fields (e.g. Thompson's Beta counts), a NamedTuple that declares
        its per-arm fields (:class:`PolicyExtra`).
    per_arm : bool
        ``True``: ``scale[k]`` is arm ``k``'s own running maximum loss (App. B);
        ``False``: every entry is the maximum over all arms.
    """

    n: np.ndarray
    pending: np.ndarray
    loss_sum: np.ndarray
    loss_sq_sum: np.ndarray
    cost_sum: np.ndarray
    scale: np.ndarray
    fixed_scale: bool
    t: int
    extra: PolicyExtra | None = None
    per_arm: bool = False


class Policy(NamedTuple):
    """A policy: its name, parameters and pure functions.

    ``select(rng, state) -> int``; ``update(rng, state, arm, reward, cost) -> state`` (``rng`` first, as every
    function that draws).
    ``index`` is the vectorised index of index policies (``None`` otherwise),
    ``params`` the tuple of floats it takes. ``ranges`` is how losses are normalised
    when no range is known and the caller asks for ``"auto"``: ``"per_arm"`` (App. B)
    or ``"shared"``. ``recentre(state, loss_sum, loss_sq_sum, max_loss) -> state`` takes
    the state to losses scored against a new centre (:mod:`pmcbandit.policies.centring`;
    :func:`recentre_state` for a policy whose own statistics do not depend on the
    losses); ``None`` keeps the centre of the squared loss where it was first set.

    Capabilities are declared, never inferred from names or signatures: ``pinned_arm`` is
    the one arm a policy always plays (the oracle; the run loop's guards never override it),
    ``observes=True`` means ``update`` also takes the keywords ``value=`` (the decision's
    mean observation) and ``info=`` (its last pull's info), and ``per_arm_ranges=True`` that
    ``init`` takes ``per_arm=True`` (App. B's per-arm loss ranges; every built-in policy does).
    ``adaptive=False`` says that ``select`` does not choose by the rewards seen (the uniform baseline), so the
    run loop's rule on arms with untrusted variance estimates (:mod:`pmcbandit.runtime.guards`, rule 5) leaves
    it alone.
    ``simulator_rule`` names the branch of the replicated-run simulator that reproduces the policy
    (:mod:`pmcbandit.simulate`): ``"index"`` (its ``index``), ``"thompson"``, ``"round_robin"`` or
    ``"fixed"`` (``pinned_arm``); ``None``: not simulated.
    ``update_reads_pending=False`` says that ``update`` reads the state's ``pending`` counts and decision count
    ``t`` only through :func:`record_loss` (every built-in policy), so its new state is the same whether or not
    the decision was counted pending by :func:`add_pending` (record_loss counts it then): the run loop skips
    that count for a decision that closes before the next choice (:class:`pmcbandit.policies.learner.PolicyLearner`).
    ``True`` (the default, for a policy that may read them) keeps the count at every decision.
    """

    name: str
    init: Callable[..., BanditState]
    select: Callable[[np.random.Generator, BanditState], int]
    update: Callable[..., BanditState]
    index: Callable | None = None
    params: tuple = ()
    ranges: str = "shared"
    recentre: Callable | None = None
    pinned_arm: int | None = None
    observes: bool = False
    per_arm_ranges: bool = False
    simulator_rule: str | None = None
    adaptive: bool = True
    update_reads_pending: bool = True


def init_state(n_arms: int, scale: float | None = None, extra: PolicyExtra | None = None, *,
               per_arm: bool = False) -> BanditState:
    """Empty state for ``n_arms`` arms.

    ``scale`` fixes the loss range of every arm if known (shared); otherwise each
    arm's range is the running maximum of the losses, over all arms, or of the
    arm's own losses when ``per_arm`` (App. B).
    """
    if isinstance(n_arms, bool) or not isinstance(n_arms, (int, np.integer)) or n_arms < 1:
        raise ValueError(f"The 'n_arms' parameter of init must be an int >= 1. Got {n_arms!r} instead.")
    if scale is not None and not (np.isfinite(scale) and scale > 0):
        raise ValueError(f"The 'scale' parameter of init must be a finite float > 0. Got {scale!r} instead.")
    if not isinstance(per_arm, bool):
        raise TypeError(f"The 'per_arm' parameter of init must be a bool. Got {per_arm!r} instead.")
    if per_arm and scale is not None:
        raise ValueError(
            f"The 'scale' parameter of init must be None when per_arm=True (per-arm ranges are "
            f"running maxima). Got {scale!r} instead."
        )
    z = np.zeros(n_arms)
    return BanditState(
        n=np.zeros(n_arms, dtype=np.int64),
        pending=np.zeros(n_arms, dtype=np.int64),
        loss_sum=z,
        loss_sq_sum=z.copy(),
        cost_sum=z.copy(),
        scale=np.full(n_arms, float(scale) if scale is not None else 0.0),
        fixed_scale=scale is not None,
        t=0,
        extra=extra,
        per_arm=per_arm,
    )


def add_pending(state: BanditState, arm: int) -> BanditState:
    """Record that a decision for ``arm`` was dispatched (the run loop calls this at every decision, so the new
    state is built from the fields unpacked at once, without the NamedTuple's keyword handling).
    """
    n, pending, loss_sum, loss_sq_sum, cost_sum, scale, fixed_scale, t, extra, per_arm = state
    pending = pending.copy()
    pending[arm] += 1
    return _new(BanditState, (n, pending, loss_sum, loss_sq_sum, cost_sum, scale, fixed_scale, t + 1, extra, per_arm))


def grown_scale(state: BanditState, arm: int, loss: float) -> np.ndarray:
    """The scale array once ``arm``'s ``loss`` is counted (``state.scale`` itself if unchanged).

    Raises ``ValueError`` if the scale is fixed and ``loss`` exceeds it.
    """
    scale = state.scale
    if loss > scale[arm]:
        if state.fixed_scale:
            raise ValueError(
                f"reward {-loss!r} of arm {arm} lies outside the declared range: loss {loss} > scale {scale[arm]}"
            )
        scale = scale.copy()
        raise_range(scale, arm, loss, state.per_arm)
    return scale


@numba.njit(cache=True)
def raise_range(scale, arm, loss, per_arm):
    """In place, the running-maximum ranges once ``arm``'s ``loss`` exceeds its range: the
    arm's own entry when ``per_arm`` (App. B), else every entry (one shared range). The one
    rule of :func:`grown_scale` and the replicated-run simulator's kernel.
    """
    if per_arm:
        scale[arm] = loss
    else:
        for i in range(scale.shape[0]):
            scale[i] = loss


_KEEP = object()


def record_loss(
    state: BanditState,
    arm: int,
    reward: float,
    cost: float,
    extra: PolicyExtra | None = _KEEP,
    scale: np.ndarray | None = None,
) -> BanditState:
    """Fold one reward into the shared statistics (every policy's ``update`` starts here).

    Returns a new state; the arrays of ``state`` are never written. ``extra``
    replaces ``state.extra`` when given (a policy's own statistics, so the
    state is built once per update); ``scale`` is :func:`grown_scale` of this
    reward when the policy already computed it (Thompson's coin needs it). This is the
    per-step hot path of the run loop, so it copies only the arrays it changes
    and builds the tuple directly (``_replace`` and ``np.isfinite`` on a scalar
    each cost about as much as an array copy).
    """
    loss = -float(reward)
    if not 0.0 <= loss < math.inf:
        raise ValueError(f"The 'reward' parameter of update must be finite and <= 0. Got {reward!r} instead.")
    if scale is None:
        scale = grown_scale(state, arm, loss)
    pending = state.pending
    if pending[arm] > 0:
        pending = pending.copy()
        pending[arm] -= 1
        t = state.t
    else:
        # A synchronous loop never calls add_pending; count the decision here then.
        t = state.t + 1
    n = state.n.copy()
    n[arm] += 1
    loss_sum = state.loss_sum.copy()
    loss_sum[arm] += loss
    loss_sq_sum = state.loss_sq_sum.copy()
    loss_sq_sum[arm] += loss * loss
    cost_sum = state.cost_sum.copy()
    cost_sum[arm] += float(cost)
    if extra is _KEEP:
        extra = state.extra
    return BanditState(n, pending, loss_sum, loss_sq_sum, cost_sum, scale, state.fixed_scale, t, extra, state.per_arm)


def recentre_state(
    state: BanditState, loss_sum: np.ndarray, loss_sq_sum: np.ndarray, max_loss: np.ndarray
) -> BanditState:
    """``state`` with every arm's losses re-scored against a new centre (:mod:`pmcbandit.policies.centring`).

    ``loss_sum``, ``loss_sq_sum`` and ``max_loss`` are each arm's sum of losses, of squared
    losses and largest loss under the new centre. The running-maximum scale becomes the largest
    loss: the arm's own when ``per_arm``, else the largest over all arms. A fixed (known) scale
    belongs to a fixed centre, so it cannot be re-centred (``ValueError``).
    """
    if state.fixed_scale:
        raise ValueError("a state with a fixed (known) loss scale cannot be re-centred: its centre is the bound a")
    scale = np.empty_like(max_loss)
    recentred_scale(max_loss, state.per_arm, scale)
    return BanditState(
        state.n,
        state.pending,
        loss_sum.copy(),
        loss_sq_sum.copy(),
        state.cost_sum,
        scale,
        state.fixed_scale,
        state.t,
        state.extra,
        state.per_arm,
    )


@numba.njit(cache=True)
def normalised_moments(n, loss_sum, loss_sq_sum, scale):
    """Mean and (biased, 1/n) variance of the normalised rewards ``1 - loss/scale[k]``.

    ``scale`` holds one normaliser per arm. Arms with ``n == 0`` get mean 1 and
    variance 0 (their index is forced to +inf by the select kernel anyway); an arm
    whose scale is still 0 (all its losses 0) gets mean 1 and variance 0.
    """
    k = n.shape[0]
    mean = np.ones(k)
    var = np.zeros(k)
    for i in range(k):
        if n[i] > 0:
            inv = 1.0 / scale[i] if scale[i] > 0.0 else 0.0
            m = loss_sum[i] / n[i]
            v = loss_sq_sum[i] / n[i] - m * m
            mean[i] = 1.0 - m * inv
            var[i] = max(v, 0.0) * inv * inv
    return mean, var


@numba.njit(cache=True)
def to_loss_scale(values, scale, n_arms):
    """App. B's back-transform in place: ``B'_k = s_k * (B_k - 1)``; +inf stays +inf.

    ``B_k`` bounds the mean normalised reward of arm ``k`` from above, so ``B'_k``
    bounds ``-E[loss_k]`` from above, on a scale common to all arms. ``s_k`` is the
    arm's range ``scale[k]``, or, while that is 0 (no loss yet, or only zero losses:
    the first observation of a run is the centre until it first moves, so its loss is 0), the largest
    range among the arms, so an arm is not taken as noiseless before it has shown
    any spread. ``values`` and ``scale`` may hold several bandits of ``n_arms`` arms
    back to back (the simulator's block).
    """
    for o in range(0, values.shape[0], n_arms):
        widest = 0.0
        for i in range(o, o + n_arms):
            widest = max(widest, scale[i])
        for i in range(o, o + n_arms):
            if values[i] < np.inf:
                values[i] = (scale[i] if scale[i] > 0.0 else widest) * (values[i] - 1.0)
    return values


@numba.njit(cache=True)
def argmax_random(values, u):
    """Index of the maximum of ``values``; ties broken by the uniform ``u`` in [0, 1).

    Among the ``m`` maximisers (in index order) the ``floor(u*m)``-th is chosen,
    so each is equally likely when ``u`` is uniform. NaN never wins.
    """
    best = -np.inf
    count = 0
    for i in range(values.shape[0]):
        v = values[i]
        if v > best:
            best = v
            count = 1
        elif v == best:
            count += 1
    if count == 0:  # all NaN or all -inf
        return int(u * values.shape[0])
    pick = int(u * count)
    for i in range(values.shape[0]):
        if values[i] == best:
            if pick == 0:
                return i
            pick -= 1
    return -1


def index_policy(
    name: str, index: Callable, params: tuple = (), *, scale: float | None = None, ranges: str = "shared"
) -> Policy:
    """Build a :class:`Policy` from a numba ``index(n, mean, var, t, params)``.

    ``n`` counts received *and* pending rewards of each arm; arms with ``n == 0``
    are played first (the initialisation of UCB1, Alg. 1 lines 1-3), in random
    order. ``t`` is the number of the decision being made (1-based).
    """
    params = tuple(float(p) for p in params)
    kernel = _make_select_kernel(index)

    def init(n_arms: int, scale: float | None = scale, *, per_arm: bool = False) -> BanditState:
        return init_state(n_arms, scale, per_arm=per_arm)

    def select(rng: np.random.Generator, state: BanditState) -> int:
        return kernel(
            state.n,
            state.pending,
            state.loss_sum,
            state.loss_sq_sum,
            state.scale,
            state.per_arm,
            state.t + 1,
            params,
            rng.random(),
        )

    def update(rng, state, arm, reward, cost=0.0):
        return record_loss(state, arm, reward, cost)

    return Policy(
        name, init, select, update, index, params, ranges, recentre_state, per_arm_ranges=True, simulator_rule="index",
        update_reads_pending=False,
    )


_KERNELS: dict = {}


def _make_select_kernel(index):
    """One compiled ``select`` per index function (shared by all its instances)."""
    kernel = _KERNELS.get(index)
    if kernel is None:

        @numba.njit
        def kernel(n, pending, loss_sum, loss_sq_sum, scale, per_arm, t, params, u):
            mean, var = normalised_moments(n, loss_sum, loss_sq_sum, scale)
            n_eff = n + pending
            values = index(n_eff, mean, var, t, params)
            if per_arm:
                to_loss_scale(values, scale, n.shape[0])
            for i in range(n.shape[0]):
                if n_eff[i] == 0:
                    values[i] = np.inf
            return argmax_random(values, u)

        _KERNELS[index] = kernel
    return kernel

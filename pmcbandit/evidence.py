"""Model evidence of any PyMC model: ``log Z ± se`` from a bandit over evidence estimators.

Neufeld et al. (2014), Sec. 6.3 and App. G: AIS arms with 400 / 2000 / 8000 annealing steps
(power-of-4 schedule, one slice-sampling sweep per step) compete, with Laplace-centred
Student-t importance sampling (a heavy- and a light-tailed proposal) and prior importance
sampling beside them, under CPU-time costs
and the paired cost-aware reward of Sec. 5; observations are combined by inverse variance.
Every arm returns log-weights whose exponentials are unbiased for ``Z``, so the combination
is done on ``Z`` (shifted to avoid underflow) and reported on the log scale.
"""

from __future__ import annotations

from collections.abc import Sequence

from pmcbandit.arms.base import Arm
from pmcbandit.budget import Budget
from pmcbandit.result import RunResult
from pmcbandit.run import run

__all__ = ["evidence_arms", "estimate_evidence", "EvidenceResult", "DEFAULT_AIS_STEPS"]

DEFAULT_AIS_STEPS = (400, 2000, 8000)
# (df, inflation) of the Laplace-centred Student-t arms: the robust default and a lighter-tailed one
# that wins on near-Gaussian posteriors (Pima T=50: relative variance per draw 0.40 vs 0.105).
DEFAULT_LAPLACE_PROPOSALS = ((5.0, 1.2), (20.0, 1.1))


class EvidenceResult(RunResult):
    """A :class:`~pmcbandit.result.RunResult` read as a model evidence.

    ``log_z``/``log_z_se`` are ``log Ẑ`` and its delta-method SE (``se(Ẑ)/Ẑ``);
    ``log_z_ci(level)`` maps the interval for ``Z`` to the log scale (see
    :func:`pmcbandit.combine.log_interval`).
    """

    @classmethod
    def from_run(cls, result: RunResult) -> "EvidenceResult":
        new = cls.__new__(cls)
        new.__dict__.update(result.__dict__)
        return new

    @property
    def log_z(self) -> float:
        return self.log_estimate

    @property
    def log_z_se(self) -> float:
        return self.log_se

    def log_z_ci(self, level: float = 0.95) -> tuple[float, float]:
        return self.log_ci(level)


def evidence_arms(
    model,
    *,
    ais_steps: Sequence[int] = DEFAULT_AIS_STEPS,
    n_chains: int = 1,
    transition: str = "slice",
    laplace: bool = True,
    laplace_proposals: Sequence[tuple[float, float]] = DEFAULT_LAPLACE_PROPOSALS,
    prior: bool = True,
    smc: bool = False,
    batch_size: int = 1000,
    cost: str = "cpu",
) -> list[Arm]:
    """The default pool of evidence arms for ``model``.

    Parameters
    ----------
    model : pymc.Model
        Continuous free variables with a forward-sampleable prior.
    ais_steps : sequence of int
        One AIS arm per number of annealing steps (the paper's 400 / 2000 / 8000).
    n_chains : int
        Independent AIS chains (estimates) per pull, evaluated together by one kernel call.
        The default 1 keeps the bandit's unit of decision small: an AIS-8000 estimate costs
        about 0.2-0.7 CPU s on Pima T=50, and with the paired reward a decision is two pulls,
        so four chains per pull made each early exploratory decision of a 60 s run cost
        seconds (benchmarks/results/bench_evidence_vs_smc.md).
    transition : {"slice", "imh"}
        AIS transition (slice sampling as the paper, or independence Metropolis from the
        Laplace Student-t, for near-Gaussian posteriors).
    laplace, prior, smc : bool
        Include Laplace-t importance sampling, prior importance sampling, PyMC's SMC
        (one ``pm.sample_smc`` run per pull; biased-consistent, see
        :class:`~pmcbandit.arms.evidence.SMCArm`).
    laplace_proposals : sequence of (df, inflation)
        One Laplace-centred Student-t arm per pair (see
        :class:`~pmcbandit.arms.evidence.LaplaceISArm`), named ``"laplace-t"`` for df = 5 and
        ``"laplace-t{df}"`` otherwise. The default pairs a heavy-tailed proposal (ν = 5,
        covariance × 1.2: safe when the posterior is skewed or heavier-tailed than a Gaussian)
        with a light-tailed one (ν = 20, × 1.1: about 4x lower variance per draw on
        near-Gaussian posteriors such as Pima T=50, ``benchmarks/results/bench_laplace_smc.md``);
        which one is better depends on the model, so the bandit decides.
    batch_size : int
        Draws per pull of the importance-sampling arms.
    cost : {"cpu", "logp_evals"}
        Cost of an AIS/prior-IS pull: CPU seconds (default) or log-density evaluations.
    """
    from pmcbandit.arms.evidence import AISArm, ModelDensity, PriorISArm

    proposals = _check_proposals(laplace_proposals) if laplace else []
    density = ModelDensity(model)  # compiled once, shared by every AIS, Laplace-t and prior-IS arm
    arms: list[Arm] = [
        AISArm(density, n_steps=int(n), n_chains=n_chains, transition=transition, cost=cost) for n in ais_steps
    ]
    if laplace:
        from pmcbandit.arms.evidence import LaplaceISArm

        for df, inflation in proposals:
            name = "laplace-t" if df == 5.0 else f"laplace-t{df:g}"
            arms.append(LaplaceISArm(density, df=df, inflation=inflation, batch_size=batch_size, name=name))
    if prior:
        arms.append(PriorISArm(density, batch_size=batch_size, cost=cost))
    if smc:
        from pmcbandit.arms.evidence import SMCArm

        arms.append(SMCArm(model))
    if not arms:
        raise ValueError("evidence_arms: the pool is empty (every arm family was switched off)")
    return arms


def _check_proposals(proposals) -> list[tuple[float, float]]:
    """``laplace_proposals`` as (df, inflation) floats with distinct df (they name the arms)."""
    try:
        pairs = [(float(df), float(c)) for df, c in proposals]
    except (TypeError, ValueError):
        raise TypeError(
            "The 'laplace_proposals' parameter of evidence_arms must be a sequence of (df, inflation) "
            f"pairs of numbers. Got {proposals!r} instead."
        ) from None
    dfs = [df for df, _ in pairs]
    if len(set(dfs)) != len(dfs):
        raise ValueError(
            "The 'laplace_proposals' parameter of evidence_arms must have distinct df values "
            f"(they name the arms). Got {proposals!r} instead."
        )
    return pairs


def estimate_evidence(
    model,
    arms: Sequence[Arm] | None = None,
    policy="thompson",
    budget: float | Budget = 30.0,
    combine: str = "inverse_variance",
    random_seed=None,
    progressbar: bool = True,
    **run_kwargs,
) -> EvidenceResult:
    """Estimate the evidence ``Z = ∫ p(θ) p(y | θ) dθ`` of a PyMC model.

    Parameters
    ----------
    model : pymc.Model
    arms : sequence of Arm, optional
        Defaults to :func:`evidence_arms(model) <evidence_arms>`.
    policy, budget, combine, random_seed, progressbar
        As in :func:`pmcbandit.run`; a float budget is seconds of wall time.
    **run_kwargs
        Passed to :func:`pmcbandit.run` (``reward``, ``checkpoint``, ``pull_timeout`` ...).

    Returns
    -------
    EvidenceResult
        ``log_z``, ``log_z_se``, ``log_z_ci(0.95)``, per-arm table, ``to_inference_data()``.
    """
    from pmcbandit.arms.evidence import check_model

    check_model(model, "estimate_evidence")
    if arms is None:
        arms = evidence_arms(model)
    arms = list(arms)
    if arms and not all(getattr(a, "log_scale", False) for a in arms):
        raise ValueError(
            "The 'arms' parameter of estimate_evidence must hold log-scale evidence arms "
            "(log-weights whose exponentials estimate Z)."
        )
    result = run(arms, policy=policy, budget=budget, combine=combine, random_seed=random_seed,
                 progressbar=progressbar, **run_kwargs)
    return EvidenceResult.from_run(result)

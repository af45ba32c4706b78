"""The HMC check arm's moves: leapfrog steps per move and where the temperatures go, at equal gradient evaluations.

Run: ``.venv/bin/python -m benchmarks.bench_check_arm [--evals 2000 --chains 48 --pulls 3]``. Writes
``benchmarks/results/bench_check_arm.md``.

The default pool's arm for the independent check is an AIS arm of one weight per pull, which the spread rule
(:attr:`pmcbandit.stats.psis.ArmReliability.undersampled`) leaves out of the consistency test while the variance
of its log weights is above 2 log n, n its weights. Within the check's share of the budget, what lowers that
variance most per second? Each model's density is built as the default pool builds it (non-centred where it has
a centred hierarchy) and one HMC pilot (:func:`pmcbandit.arms.evidence.ais.tune_hmc`, 5 leapfrog steps) fixes the
step sizes and masses of every arm. The arms spend the same ``--evals`` leapfrog steps per chain: 5 per move on
the power-4 schedule (the longer HMC arm of the pool) and on the pilot's temperatures
(:func:`pmcbandit.arms.evidence.ais.pilot_schedule`), 2 and 1 per move on the pilot's temperatures with 2.5 and 5
times the temperatures. Pulls of ``--chains`` chains go round-robin over the arms ``--pulls`` times, so machine
load hits all alike. ``var`` is the variance of all the arm's log weights; ``CPU s`` is ``time.process_time``
per chain; ``var x CPU s`` is what the check arm's spread costs (for log weights that shrink as 1/steps, the
seconds that bring it under a bound are proportional to it); ``log mean w - log Z`` is the arm's estimate against
the model's reference.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import pmcbandit  # noqa: F401  (configures PyTensor before pymc)
from benchmarks._common import machine, model_sections, models_option, utc_now, write_section

#: (label, leapfrog steps per move, schedule)
ARMS = (("5 leapfrog, power-4", 5, "power4"), ("5 leapfrog, pilot", 5, "pilot"),
        ("2 leapfrog, pilot", 2, "pilot"), ("1 leapfrog, pilot", 1, "pilot"))
MODELS = ("logistic_regression_d50", "hierarchical_logistic_50", "hierarchical_normal_100", "gamma_poisson20")


def _model(name: str):
    """The model and its reference log Z."""
    if name == "gamma_poisson20":
        from benchmarks.bench_ais_hmc import gp_log_z, gp_model

        return gp_model(), gp_log_z()[0]
    from models.evidence_suite import SUITE

    suite = SUITE[name]()
    return suite.model, suite.log_z


def measure(name: str, evals: int, chains: int, pulls: int) -> str:
    from pmcbandit.arms.evidence import AISArm
    from pmcbandit.arms.evidence.ais import HMC_LEAPFROG, HMC_PERSISTENCE, HMC_TARGET_ACCEPT, tune_hmc
    from pmcbandit.arms.evidence._cache import density_for

    model, log_z = _model(name)
    notes: list[str] = []
    density = density_for(model, True, notes)
    start = time.perf_counter()
    pilot = tune_hmc(density, HMC_LEAPFROG, HMC_TARGET_ACCEPT, HMC_PERSISTENCE)  # as the default pool's, untimed
    pilot_seconds = time.perf_counter() - start
    arms = [AISArm(density, n_steps=evals // lf, n_chains=chains, transition="hmc", hmc_leapfrog=lf,
                   schedule=schedule, hmc_pilot=pilot) for _, lf, schedule in ARMS]
    log_w = [[] for _ in arms]
    cpu = np.zeros(len(arms))
    for p in range(pulls):
        for k, arm in enumerate(arms):
            t = time.process_time()
            log_w[k].append(arm.pull(np.random.default_rng([p, k])).values)
            cpu[k] += time.process_time() - t
    rows = ["| arm | temperatures | var(log w) | CPU s per chain | var x CPU s | against 5 leapfrog, power-4 | "
            "log mean w - log Z |", "|---|---|---|---|---|---|---|"]
    base = None
    for (label, _, _), arm, lw, c in zip(ARMS, arms, log_w, cpu):
        lw = np.concatenate(lw)
        var, sec = float(np.var(lw, ddof=1)), c / lw.size
        top = lw.max()
        est = top + np.log(np.mean(np.exp(lw - top)))
        base = var * sec if base is None else base
        rows.append(f"| {label} | {arm.n_steps} | {var:.3g} | {sec:.3g} | {var * sec:.3g} | "
                    f"{base / (var * sec):.2f}x | {est - log_z:+.3f} |")
    return (f"### {name} (dim {density.dim}); pilot: {pilot.betas.size} temperatures, {pilot_seconds:.1f} s\n\n"
            + "\n".join(rows))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--evals", type=int, default=2000, help="leapfrog steps per chain of every arm")
    parser.add_argument("--chains", type=int, default=48, help="chains (log weights) per pull")
    parser.add_argument("--pulls", type=int, default=3, help="pulls per arm, round-robin")
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    args = parser.parse_args(argv)
    started = utc_now()
    body = model_sections(args.models, lambda name: measure(name, args.evals, args.chains, args.pulls))
    command = (f".venv/bin/python -m benchmarks.bench_check_arm --evals {args.evals} --chains {args.chains} "
               f"--pulls {args.pulls}" + models_option(args.models, MODELS))
    markdown = f"""## The HMC check arm's moves: leapfrog steps per move and the temperatures, at equal evaluations

- machine: {machine()}
- date: {started}
- command: `{command}`
- every arm: {args.evals} leapfrog steps per chain, {args.pulls} pulls of {args.chains} chains, round-robin; one
  HMC pilot per model fixes every arm's step sizes and masses. `against ...`: the ratio of `var x CPU s`, above
  1 where the arm's spread costs less than the 5-leapfrog power-4 arm's (the pool's longer HMC arm).

{body}
"""
    print(write_section("bench_check_arm", markdown))


if __name__ == "__main__":
    main()

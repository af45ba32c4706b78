"""The pilot-t arms' moments: HMC at the posterior from the Laplace mode against the annealing pilot, side by side.

Run: ``.venv/bin/python -m benchmarks.bench_posterior_pilot [--batches 10 --models ...]``. Writes
``benchmarks/results/bench_posterior_pilot.md``.

On each model, built as the default pool builds it (non-centred where it has a centred hierarchy), in one process:
the full mode search (:func:`pmcbandit.arms.evidence.modes.find_modes`), then the two sources of the posterior
moments the pilot-t arms are centred and scaled on. The posterior pilot from the top mode
(:func:`pmcbandit.arms.evidence.posterior_pilot.posterior_pilot`) runs with its fewest draw moves, then as the pool
runs it (draws stopped once a pilot-t arm passes the pool's set-up check,
:class:`pmcbandit.evidence.importance.PilotCheck`) on the gradient the mode search compiled, then that again on the
NUMBA gradient, whose compilation is timed apart (on models of 100 or more
dimensions the mode search compiled that one already). The annealing pilot of the HMC arm
(:func:`pmcbandit.arms.evidence.ais.tune_hmc`) runs last; its move kernel is compiled on its first call, so its time
is that of a fresh process. For the Laplace arms' own proposals and each pilot's pilot-t / pilot-t20 arms,
``--batches`` batches of 2000 importance weights (fixed seeds, the same for every arm): the Pareto k-hat of the first
batch (the pool's check at set-up), the variance of the log weights, and the estimate of all batches against the
model's reference log Z (``z`` in units of the batches' own standard error).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import pmcbandit  # noqa: F401  (configures PyTensor before pymc)
from benchmarks._common import machine, model_sections, models_option, utc_now, write_section

MODELS = ("hierarchical_logistic_50", "hierarchical_normal_100", "beta_binomial", "gamma_poisson20")
BATCH = 2000
#: The default pool's batch size (``evidence_arms``' ``batch_size``): the draws of its set-up check.
POOL_BATCH = 1000


def _model(name: str):
    """The model and its reference log Z."""
    if name == "gamma_poisson20":
        from benchmarks.bench_ais_hmc import gp_log_z, gp_model

        return gp_model(), gp_log_z()[0]
    from models.evidence_suite import SUITE

    suite = SUITE[name]()
    return suite.model, suite.log_z


def _row(label: str, arm, batches: int, log_z: float) -> str:
    from pmcbandit.stats.psis import pareto_khat

    lw = [arm.log_weights(np.random.default_rng([b, 20171103]), BATCH) for b in range(batches)]
    khat = float(pareto_khat(lw[0]))
    per = np.array([np.log(np.mean(np.exp(w - w.max()))) + w.max() for w in lw])
    allw = np.concatenate(lw)
    top = allw.max()
    est = top + np.log(np.mean(np.exp(allw - top)))
    ratio = np.exp(per - est)
    se = float(np.std(ratio, ddof=1) / np.sqrt(batches)) if batches > 1 else float("nan")
    z = (est - log_z) / se if se > 0 else float("nan")
    finite = allw[np.isfinite(allw)]
    return f"| {label} | {khat:.2f} | {np.var(finite):.3g} | {est - log_z:+.4f} | {se:.2g} | {z:+.2f} |"


def measure(name: str, batches: int) -> str:
    from pmcbandit.arms.evidence import LaplaceISArm
    from pmcbandit.arms.evidence._cache import density_for
    from pmcbandit.arms.evidence.ais import HMC_LEAPFROG, HMC_PERSISTENCE, HMC_TARGET_ACCEPT, tune_hmc
    from pmcbandit.arms.evidence.laplace_is import moment_fit
    from pmcbandit.arms.evidence.modes import find_modes
    from pmcbandit.arms.evidence.posterior_pilot import (POSTERIOR_PILOT_CHAINS, POSTERIOR_PILOT_DRAWS, draw_moves,
                                                         posterior_pilot)
    from pmcbandit.evidence.importance import DEFAULT_LAPLACE_PROPOSALS, PilotCheck

    model, log_z = _model(name)
    density = density_for(model, True, [])
    search = find_modes(density)
    if not search.modes:
        return f"### {name} (dim {density.dim})\n\n- no mode found ({search.reason}): no posterior pilot"
    mode = search.modes[0]
    short = posterior_pilot(density, mode.location, mode.precision, n_draws=POSTERIOR_PILOT_DRAWS)
    check = PilotCheck(density, DEFAULT_LAPLACE_PROPOSALS, POOL_BATCH, "cpu_seconds")
    start = time.perf_counter()
    post = posterior_pilot(density, mode.location, mode.precision, enough=check)  # as in the pool
    post_seconds = time.perf_counter() - start
    start = time.perf_counter()
    density.grad_jit_fn  # compiled here for the annealing pilot (which needs it) after the posterior pilot ran
    grad_seconds = time.perf_counter() - start
    start = time.perf_counter()
    posterior_pilot(density, mode.location, mode.precision, enough=check)  # the same run on the NUMBA gradient, timed
    fast_seconds = time.perf_counter() - start
    start = time.perf_counter()
    anneal = tune_hmc(density, HMC_LEAPFROG, HMC_TARGET_ACCEPT, HMC_PERSISTENCE)
    anneal_seconds = time.perf_counter() - start
    rows = ["| arm | k-hat (first batch) | var(log w) | log Z-hat - log Z | se | z |", "|---|---|---|---|---|---|"]
    pilots = (short, post) if post.n_draws > short.n_draws else (post,)  # the same run where the pool stopped early
    sources = (("laplace", search),
               *((f"posterior pilot, {p.n_draws} draws",
                  moment_fit(p.posterior_mean, p.posterior_cov, p.n_draws, "the posterior pilot")) for p in pilots),
               ("annealing pilot", moment_fit(anneal.posterior_mean, anneal.posterior_cov, anneal.n_draws,
                                              "the HMC pilot")))
    for label, modes in sources:
        if label == "laplace" and not search.interior:
            rows.append(f"| laplace | no interior mode ({search.reason}) | | | | |")
            continue
        for df, inflation, defensive in DEFAULT_LAPLACE_PROPOSALS:
            arm = LaplaceISArm(density, df=df, inflation=inflation, defensive=defensive, batch_size=BATCH,
                               modes=modes, name="t")
            rows.append(_row(f"{label}, t{df:g}", arm, batches, log_z))
    return (f"### {name} (dim {density.dim})\n\n"
            f"- posterior pilot as the pool runs it: {post_seconds:.2f} s on the gradient the mode search compiled "
            f"({fast_seconds:.2f} s on the NUMBA gradient, which took {grad_seconds:.2f} s to compile), "
            f"{post.n_draws} draws (of at most {draw_moves(density.dim, POSTERIOR_PILOT_CHAINS)} moves x "
            f"{POSTERIOR_PILOT_CHAINS} chains), step size {post.step_size:.3g}, acceptance {post.accept:.2f}; "
            f"with its fewest draw moves: {short.seconds:.2f} s, {short.n_draws} draws\n"
            f"- annealing pilot: {anneal_seconds:.2f} s (its move kernel compiled in it), {anneal.betas.size} "
            f"temperatures, {anneal.n_draws} draws\n"
            f"- time ratio, annealing / posterior pilot: {anneal_seconds / post_seconds:.1f}x\n\n" + "\n".join(rows))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=10, help="batches of 2000 weights per arm")
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    args = parser.parse_args(argv)
    started = utc_now()
    body = model_sections(args.models, lambda name: measure(name, args.batches))
    command = (f".venv/bin/python -m benchmarks.bench_posterior_pilot --batches {args.batches}"
               + models_option(args.models, MODELS))
    markdown = f"""## Pilot-t moments: the posterior pilot beside the annealing pilot

- machine: {machine()}
- date: {started}
- command: `{command}`
- one process per command, the models in turn; the pool's check at set-up passes an arm whose k-hat on one batch
  of 1000 weights is at most 0.67 (0.70 at the table's 2000)

""" + body
    print(write_section("bench_posterior_pilot", markdown))


if __name__ == "__main__":
    main()

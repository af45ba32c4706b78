"""Tempered SMC with HMC moves on the pilot's ladder vs AIS-HMC: variance x cost of Z-hat on one shared pilot.

Run: ``.venv/bin/python -m benchmarks.bench_tempered_smc [--seconds 12] [--quick]``. Writes
``benchmarks/results/bench_tempered_smc.md``.

Models (exact log Z): ``SUITE["hierarchical_normal_100"]`` (dim 102), the Gamma-Poisson model of
:mod:`benchmarks.bench_ais_hmc` (``gp_model``, ``gp_log_z``; dim 22) and ``SUITE["logistic_regression_d50"]``
(dim 50). Each model is compiled as the evidence pool compiles it (``density_for(model, True, [])``: non-centred
where a centred hierarchy is found) and gets ONE pilot (``tune_hmc`` at the HMC defaults), which every arm
shares: ``AISArm(transition="hmc", n_steps=2000)`` with as many chains per pull as make its pull cost about
that of the cheapest SMC setting, and ``TemperedSMCArm`` at a few ``(n_particles, n_moves)`` settings.

The arms are pulled round-robin in one process until each has spent ``--seconds`` CPU seconds (3 times that on
``logistic_regression_d50``, whose pulls take seconds)
(``time.process_time`` around the pull), so machine load hits them alike. Per arm: the pull's estimate
:math:`\\hat Z` (AIS: the mean of its chains' weights) divided by the exact :math:`Z`; ``relvar`` is
:math:`\\mathrm{var}(\\hat Z/Z)` over the pulls, ``relvar x cost`` (times the mean CPU seconds per pull) is what
the bandit minimises (Neufeld et al. 2014, Sec. 3), and ``SMC/AIS`` divides it by the AIS arm's on the same
model. ``var(log Z-hat) x cost`` is the same product on the log scale (less sensitive to a few large
weights). ``bias log`` is the mean of :math:`\\log\\hat Z - \\log Z` (negative by Jensen for any unbiased
:math:`\\hat Z`), ``log mean`` is :math:`\\log\\overline{\\hat Z/Z}` with its delta-method SE. Heavy tails make
the sample variance an underestimate: the Pareto k-hat of the pulls' :math:`\\log\\hat Z` is reported.
"""

from __future__ import annotations

import argparse
import math
import os
import time

import numpy as np

import pmcbandit  # noqa: F401  (configures PyTensor before pymc)
from benchmarks._common import machine, utc_now, write_section

AIS_STEPS = 2000
#: (n_particles, n_moves, temperatures per pilot temperature) of the SMC arms; the first (cheapest) sets the AIS
#: arm's chains per pull. A ladder factor f > 1 is ``n_temperatures = f * K`` (the pilot's K interpolated,
#: ``pilot_ladder``).
SETTINGS = ((32, 1, 1), (64, 2, 1), (128, 2, 1), (64, 1, 4))
QUICK_SETTINGS = ((32, 1, 1), (64, 2, 1))
#: Models whose density is slow to evaluate get this many times ``--seconds`` per arm (a pull takes seconds).
SLOW = {"logistic_regression_d50": 3.0}


def _load() -> str:
    return " ".join(open("/proc/loadavg").read().split()[:3]) if os.path.exists("/proc/loadavg") else "?"


def _models(quick: bool):
    from benchmarks.bench_ais_hmc import gp_log_z, gp_model
    from models.evidence_suite import SUITE

    hier = SUITE["hierarchical_normal_100"]()
    out = [("hierarchical_normal_100", hier.model, hier.log_z)]
    out.append(("gamma_poisson20", gp_model(), gp_log_z()[0]))
    if not quick:
        logit = SUITE["logistic_regression_d50"]()
        out.append(("logistic_regression_d50", logit.model, logit.log_z))
    return out


def build(model, settings):
    """Density, pilot and arms of one model, with the CPU seconds of each set-up stage."""
    from pmcbandit.arms.evidence import AISArm, TemperedSMCArm
    from pmcbandit.arms.evidence._cache import density_for
    from pmcbandit.arms.evidence.ais import HMC_LEAPFROG, HMC_PERSISTENCE, HMC_TARGET_ACCEPT, tune_hmc

    setup = {}
    start = time.process_time()
    density = density_for(model, True, [])
    density.grad_jit_fn  # compiled here, not in the pilot's time
    setup["compile"] = time.process_time() - start
    start = time.process_time()
    pilot = tune_hmc(density, HMC_LEAPFROG, HMC_TARGET_ACCEPT, HMC_PERSISTENCE)
    setup["pilot"] = time.process_time() - start
    smc = []
    for n, m, f in settings:
        start = time.process_time()
        ladder = None if f == 1 else f * pilot.betas.size
        name = f"smc-hmc-{n}x{m}" + ("" if f == 1 else f"-T{ladder}")
        arm = TemperedSMCArm(density, n_particles=n, n_moves=m, n_temperatures=ladder, hmc_pilot=pilot, name=name)
        smc.append((arm, time.process_time() - start))
    probe = AISArm(density, n_steps=AIS_STEPS, n_chains=1, transition="hmc", hmc_pilot=pilot)
    chains = max(1, round(smc[0][0].expected_seconds / probe.expected_seconds))
    start = time.process_time()
    ais = AISArm(density, n_steps=AIS_STEPS, n_chains=chains, transition="hmc", hmc_pilot=pilot)
    arms = [(ais, time.process_time() - start)] + smc
    return density, pilot, arms, setup


def measure(arms, log_z: float, seconds: float, seed: int = 0):
    """Round-robin pulls until every arm has spent ``seconds`` CPU seconds; one row per arm."""
    from pmcbandit.stats.psis import pareto_khat

    rng = np.random.default_rng(seed)
    logs = {arm.name: [] for arm, _ in arms}
    spent = dict.fromkeys(logs, 0.0)
    info = {arm.name: [] for arm, _ in arms}
    while min(spent.values()) < seconds:
        for arm, _ in arms:
            if spent[arm.name] >= seconds:
                continue
            start = time.process_time()
            pull = arm.pull(rng)
            spent[arm.name] += time.process_time() - start
            top = pull.values.max()
            logs[arm.name].append(top + math.log(np.exp(pull.values - top).mean()))  # log of the pull's Z-hat
            info[arm.name].append(pull.info["accept_rate"])
    rows = []
    for arm, setup in arms:
        lz = np.array(logs[arm.name])
        r = np.exp(lz - log_z)
        cost = spent[arm.name] / lz.size
        mean = float(r.mean())
        se = float(r.std(ddof=1) / math.sqrt(r.size))
        relvar = float(r.var(ddof=1))
        rows.append(dict(
            arm=arm.name, setup=setup, pulls=lz.size, cost=cost, predicted=arm.expected_seconds, relvar=relvar,
            vxc=relvar * cost,
            lvxc=float(lz.var(ddof=1)) * cost, bias=float((lz - log_z).mean()),
            bias_se=float((lz - log_z).std(ddof=1) / math.sqrt(lz.size)),
            log_mean=math.log(mean) if mean > 0 else -math.inf, log_se=se / mean if mean > 0 else math.inf,
            khat=float(pareto_khat(lz)), accept=float(np.mean(info[arm.name])),
            shape=(f"{arm.n_chains} chains x {arm.n_steps} steps" if hasattr(arm, "n_chains")
                   else f"{arm.n_particles} particles x {arm.n_moves} moves x {arm.n_steps} steps"),
        ))
    base = rows[0]
    for row in rows:
        row["ratio"] = row["vxc"] / base["vxc"] if base["vxc"] > 0 else math.nan
        row["lratio"] = row["lvxc"] / base["lvxc"] if base["lvxc"] > 0 else math.nan
    return rows


def _table(rows) -> str:
    head = ("| arm | shape | setup CPU s | pulls | CPU s / pull | predicted s | relvar | relvar x cost | SMC/AIS "
            "| var(log Z-hat) x cost | SMC/AIS (log) | bias log ± se | log mean ± se | k-hat | accept |")
    lines = [head, "|" + "---|" * 15]
    for r in rows:
        lines.append(
            f"| {r['arm']} | {r['shape']} | {r['setup']:.1f} | {r['pulls']} | {r['cost']:.3g} | {r['predicted']:.3g} "
            f"| {r['relvar']:.3g} "
            f"| {r['vxc']:.3g} | {r['ratio']:.3g} | {r['lvxc']:.3g} | {r['lratio']:.3g} "
            f"| {r['bias']:.3f} ± {r['bias_se']:.3f} | {r['log_mean']:.3f} ± {r['log_se']:.3f} | {r['khat']:.2f} "
            f"| {r['accept']:.2f} |")
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=12.0, help="CPU seconds of pulls per arm and model")
    parser.add_argument("--quick", action="store_true", help="two models, two SMC settings, 4 s per arm")
    args = parser.parse_args(argv)
    seconds = 4.0 if args.quick else args.seconds
    settings = QUICK_SETTINGS if args.quick else SETTINGS
    before = _load()
    sections = []
    for name, model, log_z in _models(args.quick):
        density, pilot, arms, setup = build(model, settings)
        rows = measure(arms, log_z, seconds * SLOW.get(name, 1.0))
        text = [f"### {name} (dim {density.dim}); exact log Z = {log_z:.6f}; pilot: {pilot.betas.size} temperatures, "
                f"{setup['pilot']:.1f} CPU s (gradient compiled in {setup['compile']:.1f} s)", "", _table(rows)]
        sections.append("\n".join(text))
        print(sections[-1], flush=True)
    command = "--quick" if args.quick else f"--seconds {args.seconds:g}"
    body = "\n\n".join(sections)
    markdown = f"""## Tempered SMC (HMC moves, pilot's ladder) vs AIS-HMC on one shared pilot

Command: `.venv/bin/python -m benchmarks.bench_tempered_smc {command}`; {machine()}; {utc_now()}; load
average {before} before, {_load()} after (2 cores shared with other jobs: compare the arms of one table, measured
side by side in one process); {seconds:g} CPU s of pulls per arm ({seconds * SLOW["logistic_regression_d50"]:g} on
logistic_regression_d50). Every arm of a model shares its one pilot; AIS: `AISArm(transition="hmc",
n_steps={AIS_STEPS})` with the chains per pull that match the cheapest SMC arm's predicted pull time; SMC:
`TemperedSMCArm(n_particles, n_moves)` on the pilot's own ladder of K temperatures (`-T<n>`: `n_temperatures=n`,
interpolated), `ess_threshold=0.5`; HMC defaults (5 leapfrog
steps, persistence 0.9) for all. relvar = var(Z-hat/Z) over the pulls against the exact Z; SMC/AIS = the arm's
relvar x cost over the AIS arm's (below 1: SMC is the better arm for the bandit); bias log = mean(log Z-hat) - log Z;
log mean = log of the mean of Z-hat/Z (0 for an unbiased arm, within its se); setup = CPU s of building the
arm on the compiled density and pilot (numba compilation of its kernel included for the first SMC arm);
predicted s = the arm's `expected_seconds` (wall time from its timed probe) against the measured CPU s / pull.
Where k-hat > 0.7 or the pulls are few, relvar (and so SMC/AIS) is not to be trusted: a Z-hat whose mean is carried by
rare large values shows a small sample variance and a large negative `log mean` (read the log-scale columns then).

{body}
"""
    print(write_section("bench_tempered_smc", markdown))


if __name__ == "__main__":
    main()

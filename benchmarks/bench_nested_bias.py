"""The bias that MCMC constrained moves add to :class:`~pmcbandit.arms.evidence.NestedArm`, measured on models
with exact evidence.

Run as ``.venv/bin/python -m benchmarks.bench_nested_bias`` (``--pulls``, ``--n-live``, ``--moves`` to choose; one
process, single-threaded numba). Under exact constrained-prior draws ``E[Ẑ] = Z`` (the arm's Notes); with slice
moves the replacements are not exact, and the mean of ``Ẑ / Z`` over many independent pulls (one run each) shows
the bias that remains: reported with its standard error, its z-score against 1, the sd of ``log Ẑ`` per run and
the mean wall seconds per run. Models: the suite's ``conjugate`` (3 dimensions), independent normal means in 4 and
10 dimensions (``tests.analytic_models``), and the spike-and-slab target of :mod:`models.spike_slab` in 5 and 10
dimensions. ``--moves`` runs each model with these slice steps per replacement as well as the default
(``max(20, 5 dim)``), so the bias of too few moves is seen beside it. The markdown goes to
``benchmarks/results/bench_nested_bias.md``.

``--cases NAME ...`` runs the named targets of :data:`models.spike_slab.SPIKE_SLAB_CASES` instead (the targets of
``bench_phase_transition``), and the markdown goes to ``benchmarks/results/bench_nested_bias_cases.md``. Each row
then also gives the pulls a relative SE of :data:`~pmcbandit.result_messages.CHECK_RESOLUTION` on Z needs, the
variance of ``Ẑ / Z`` per pull over that resolution squared, and the seconds they take at the measured cost per run:
what the arm must spend before it can count as a cross-family check (:mod:`pmcbandit.result`, step 4).
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from benchmarks._common import machine, utc_now, write_section


def _models():
    from models.evidence_suite import conjugate
    from models.spike_slab import spike_mass, spike_slab
    from tests import analytic_models

    suite = conjugate()
    yield "conjugate (suite, d=3)", suite.model, suite.log_z
    for dim in (4, 10):
        model, _, log_z, _, _ = analytic_models.independent_normal_means(dim, m0=0.5, s0=2.0, s=0.4)
        yield f"normal means d={dim}", model, log_z
    for dim in (5, 10):
        # Likelihood weights 1/2, spike sd 0.1 inside slab sd 1, prior sd 5.
        t = spike_slab(dim, 0.1, 1.0, spike_mass(dim, 0.1, 1.0, 0.5, 5.0), 5.0)
        yield f"spike-and-slab d={dim}", t.model, t.log_z


def _cases(names):
    from models.spike_slab import case

    for name in names:
        t = case(name)
        yield f"{name} (d={t.dim})", t.model, t.log_z


def measure(density, log_z, n_live, n_moves, pulls, seed) -> dict:
    from pmcbandit.arms.evidence import NestedArm

    arm = NestedArm(density, n_live=n_live, n_moves=n_moves)
    rng = np.random.default_rng(seed)
    start = time.perf_counter()
    v = np.concatenate([arm.pull(rng).values for _ in range(pulls)])
    seconds = (time.perf_counter() - start) / pulls
    ratio = np.exp(v - log_z)
    mean, se = ratio.mean(), ratio.std(ddof=1) / np.sqrt(ratio.size)
    return dict(moves=arm.n_moves, mean=mean, se=se, z=(mean - 1.0) / se, sd_log=float(np.std(v)),
                seconds=seconds, var_ratio=float(ratio.var(ddof=1)))


def main(argv=None) -> None:
    from pmcbandit.arms.evidence import ModelDensity

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pulls", type=int, default=400)
    parser.add_argument("--n-live", type=int, default=16)
    parser.add_argument("--moves", type=int, nargs="*", default=[5])
    parser.add_argument("--seed", type=int, default=2017)
    parser.add_argument("--cases", nargs="+", default=None, help="names of models.spike_slab.SPIKE_SLAB_CASES")
    args = parser.parse_args(argv)
    from pmcbandit.result_messages import CHECK_RESOLUTION

    check = args.cases is not None
    extra = f" | pulls for relative SE {CHECK_RESOLUTION:g} | seconds for them" if check else ""
    title = ("## Nested-sampling arm on the spike-and-slab targets: bias, and the runs a check needs" if check else
             "## Nested-sampling arm: the bias of slice-move replacements on models with exact evidence")
    lines = [
        title,
        "",
        f"{utc_now()}, {machine()}; `python -m benchmarks.bench_nested_bias {' '.join(sys.argv[1:])}`. "
        f"{args.n_live} live points, {args.pulls} pulls (one run each) per row; mean of Ẑ/Z ± SE, z = (mean - 1)/SE.",
        "",
        "| model | slice steps per replacement | mean Ẑ/Z | SE | z | sd log Ẑ | s per run" + extra + " |",
        "|---|---|---|---|---|---|---|" + ("---|---|" if check else ""),
    ]
    for name, model, log_z in (_cases(args.cases) if check else _models()):
        density = ModelDensity(model)
        for moves in [None, *args.moves]:
            r = measure(density, log_z, args.n_live, moves, args.pulls, args.seed)
            lines.append(f"| {name} | {r['moves']}{' (default)' if moves is None else ''} | {r['mean']:.3f} | "
                         f"{r['se']:.3f} | {r['z']:+.2f} | {r['sd_log']:.2f} | {r['seconds']:.3g} |")
            if check:
                need = int(np.ceil(r["var_ratio"] / CHECK_RESOLUTION**2))
                lines[-1] += f" {need} | {need * r['seconds']:.3g} |"
            print(lines[-1], flush=True)
    text = "\n".join(lines)
    print(text)
    write_section("bench_nested_bias_cases" if check else "bench_nested_bias", text)


if __name__ == "__main__":
    main()

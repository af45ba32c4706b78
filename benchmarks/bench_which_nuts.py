"""Which NUTS for my model? compare_samplers across the NUTS backends, compile time included, against today's practice.

Models (``--models``): ``eight_schools`` (non-centred, Gelman et al. 2013, Sec. 5.5), ``pima`` (logistic
regression on all 768 Pima rows, 8 features and an intercept, :mod:`models.pima`), ``gauss100``
(a 100-dimensional Gaussian with correlation 0.9 between every two coordinates: a low-rank mass matrix
should matter) and ``funnel`` (Neal's funnel, 1 + 9 dimensions, centred: the difficult geometry).
The arms: every installed backend of :data:`pmcbandit.arms.samplers.NUTS_BACKENDS`, ``--tune`` +
``--draws`` iterations per pull, the every-coordinate quantity (``sampler_arms``' default).

Per model:

1. every arm is built and compiled once (``compile_seconds``, the table's last columns);
2. a *bank* of up to ``--bank-pulls`` pulls per arm (at most ``--bank-seconds`` CPU seconds each) gives
   each backend's long-run efficiency :math:`1/(\\bar c \\sum_j \\widehat{\\mathrm{Var}}\\,z_j)` and the
   convergence flags of :func:`pmcbandit.compare.gate.convergence`; the best unflagged backend is the truth;
3. each seed runs ``compare_samplers(arms, budget=--seconds, random_seed=seed)`` on the compiled arms (the
   budget still counts their compile seconds, as for a fresh user): decision time (wall), whether it
   decided, and whether the selection is within the guaranteed factor ``1 + epsilon`` of the bank's best;
   the factor the run proves (``proven_factor``: at most ``1 + epsilon`` after a decision, the statement a run
   stopped by the budget ends with) beside the bank's ratio of its best to the selection;
4. today's practice on the same seeds: one run of each backend, pick the highest ``az.ess`` (the smallest
   bulk ESS over the coordinates) per wall second of the run; a wrong pick is one outside the guaranteed
   factor of the bank's best (or a flagged backend). Its wall time is the sum of the runs, with and
   without the compile seconds.

Where the bank flags every backend, no backend may win (a flagged arm is never selected), so the right answer is
no selection: ours is counted right only when it selects none, and today's pick is always wrong. A run that ends
with one unflagged backend left (``stopped_by == "no_arm"``) is counted apart from a confident decision.

The backends come with the samplers extra (``make test-samplers`` installs it into ``.venv``)::

    .venv/bin/python -m benchmarks.bench_which_nuts                          # 4 models, 10 seeds, 300 s
    .venv/bin/python -m benchmarks.bench_which_nuts --models eight_schools --seeds 2 --seconds 60 \\
        --bank-pulls 30 --bank-seconds 20                                   # the small check
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings

import numpy as np

from benchmarks._common import machine, utc_now, write_section

MODELS = ("eight_schools", "pima", "gauss100", "funnel")


def build_model(name: str):
    import pymc as pm

    if name == "eight_schools":
        y = np.array([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0])
        sigma = np.array([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0])
        with pm.Model() as m:
            mu = pm.Normal("mu", 0.0, 5.0)
            tau = pm.HalfCauchy("tau", 5.0)
            eta = pm.Normal("eta", 0.0, 1.0, shape=8)
            pm.Normal("y", mu + tau * eta, sigma, observed=y)
        return m
    if name == "pima":
        from models.pima import N_ROWS, load_data

        X, y = load_data(N_ROWS)
        with pm.Model() as m:
            beta = pm.Normal("beta", 0.0, 1.0, shape=X.shape[1] + 1)
            pm.Bernoulli("y", logit_p=beta[0] + X @ beta[1:], observed=y)
        return m
    if name == "gauss100":
        d, rho = 100, 0.9
        cov = (1 - rho) * np.eye(d) + rho * np.ones((d, d))
        with pm.Model() as m:
            pm.MvNormal("x", np.zeros(d), cov=cov)
        return m
    if name == "funnel":
        with pm.Model() as m:
            v = pm.Normal("v", 0.0, 3.0)
            pm.Normal("x", 0.0, pm.math.exp(v / 2), shape=9)
        return m
    raise ValueError(f"unknown model {name!r}; choose among {MODELS}")


def bank(arms, pulls: int, seconds: float, seed: int):
    """Long-run efficiency per arm (every-coordinate rule) and the convergence flags, from up to ``pulls``
    pulls per arm within ``seconds`` CPU seconds each.
    """
    from pmcbandit.compare.gate import convergence

    rng = np.random.default_rng(seed)
    eff, flags = [], []
    for arm in arms:
        out, spent = [], 0.0
        while len(out) < pulls and spent < seconds:
            p = arm.pull(rng.spawn(1)[0])
            out.append(p)
            spent += p.cost
        z = np.array([[p.info[c] for c in arm.components] for p in out])
        cost = np.mean([p.cost for p in out])
        eff.append(1.0 / (cost * z.var(axis=0, ddof=1).sum()))
        values = np.array([p.values[0] for p in out])
        frac = np.array([p.info["divergent_fraction"] for p in out])
        var = np.array([p.info["chain_variance"] for p in out])
        flag = convergence(values, np.zeros(len(out), int), frac, var, 1, np.ones(1, bool))
        flags.append(flag.reasons[0])
    return np.array(eff), flags


def todays_pick(arms, seed: int) -> tuple[int, float]:
    """One run of each backend; the highest min-over-coordinates az.ess per wall second; the runs' wall time."""
    from pmcbandit._compat import arviz_ess

    rng = np.random.default_rng(10_000 + seed)
    score, wall = [], 0.0
    for arm in arms:
        start = time.perf_counter()
        X, _, _ = arm.chain(rng.spawn(1)[0])
        elapsed = time.perf_counter() - start
        wall += elapsed
        score.append(float(np.min(arviz_ess(X))) / elapsed)
    return int(np.argmax(score)), wall


def measure(name: str, args) -> str:
    import pmcbandit as pb
    from pmcbandit.arms.samplers import installed_backends
    from pmcbandit.compare.compare import DEFAULT_EPSILON

    model = build_model(name)
    backends = [b for b in installed_backends() if not args.backends or b in args.backends]
    arms = pb.sampler_arms(model, samplers=[(b, dict(tune=args.tune, draws=args.draws)) for b in backends])
    for arm in arms:
        arm.warm_up()
    compile_s = [arm.compile_seconds for arm in arms]
    eff, flags = bank(arms, args.bank_pulls, args.bank_seconds, seed=99)
    ok = np.array([not f for f in flags])
    best = int(np.argmax(np.where(ok, eff, -np.inf))) if ok.any() else -1
    factor = 1.0 + DEFAULT_EPSILON

    def good(i):
        """Right: within the factor of the bank's best; where the bank flags every backend, selecting none."""
        if best < 0:
            return i < 0
        return i >= 0 and ok[i] and eff[i] * factor >= eff[best]

    rows = []
    for seed in range(args.seeds):
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = pb.compare_samplers(arms, budget=args.seconds, random_seed=seed, progressbar=False)
        wall = time.perf_counter() - start + sum(compile_s)  # a fresh user compiles first
        sel = res.selected_indices
        ours = int(sel[0]) if len(sel) else -1
        pick, their_wall = todays_pick(arms, seed)
        rows.append(dict(seed=seed, decided=res.stopped_by == "confidence", left=res.stopped_by == "no_arm" and ours >= 0,
                         wall=wall, ours=ours, ours_good=good(ours), theirs=pick, theirs_good=good(pick),
                         their_wall=their_wall, their_wall_compile=their_wall + sum(compile_s),
                         amortisation=res.amortisation(), excluded=res.excluded, proven=res.proven_factor,
                         behind=eff[best] / eff[ours] if best >= 0 and ours >= 0 else float("nan")))
    names = [a.name for a in arms]
    lines = [f"### {name}", "",
             "| backend | compile s | bank efficiency | bank pulls flag | ratio to best |", "|---|---|---|---|---|"]
    for i, n in enumerate(names):
        ratio = eff[best] / eff[i] if best >= 0 else float("nan")
        lines.append(f"| {n} | {compile_s[i]:.2f} | {eff[i]:.3g} | {flags[i] or 'ok'} | {ratio:.2f} |")
    lines += ["", "| seed | decided | decision s (compile incl.) | ours | within factor | today's pick | "
              "within factor | proven factor (bank's ratio) | today's s (+compile) | once / many (runs) | flagged |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        a = r["amortisation"]
        am = "—" if a is None else f"{names[a.once]} / {names[a.many]} ({a.runs_point:.0f})"
        flagged = ", ".join(f"{k} ({v.split(':')[0]})" for k, v in r["excluded"].items())
        decided = "yes" if r["decided"] else "one left" if r["left"] else "no"
        lines.append(f"| {r['seed']} | {decided} | {r['wall']:.1f} | {names[r['ours']] if r['ours'] >= 0 else '—'} "
                     f"| {r['ours_good']} | {names[r['theirs']]} | {r['theirs_good']} | {r['proven']:.3g} ({r['behind']:.3g}) "
                     f"| {r['their_wall']:.1f} "
                     f"({r['their_wall_compile']:.1f}) | {am} | {flagged or '—'} |")
    n = len(rows)
    right = (f"ours within the factor {factor:g} of the bank's best" if best >= 0
             else "the bank flags every backend; ours selecting none")
    lines += ["", f"decisions {sum(r['decided'] for r in rows)}/{n} (one backend left unflagged: "
              f"{sum(r['left'] for r in rows)}/{n}); {right} {sum(r['ours_good'] for r in rows)}/{n}; today's practice wrong picks "
              f"{sum(not r['theirs_good'] for r in rows)}/{n}; mean wall ours {np.mean([r['wall'] for r in rows]):.1f} s "
              f"vs today's {np.mean([r['their_wall_compile'] for r in rows]):.1f} s with compile"]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    parser.add_argument("--backends", nargs="+", default=None, help="a subset of the installed backends")
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=300.0, help="compare_samplers' wall budget")
    parser.add_argument("--tune", type=int, default=500)
    parser.add_argument("--draws", type=int, default=500)
    parser.add_argument("--bank-pulls", type=int, default=200)
    parser.add_argument("--bank-seconds", type=float, default=120.0)
    parser.add_argument("--section", default="bench_which_nuts", help="results/<section>.md")
    args = parser.parse_args(argv)
    import pmcbandit
    import pymc

    from pmcbandit.arms.samplers import installed_backends

    head = ["## Which NUTS for my model? (`bench_which_nuts`)", "",
            f"{machine()}; {utc_now()}; Python {sys.version.split()[0]}, PyMC {pymc.__version__}, "
            f"pmcbandit {pmcbandit.__version__}; backends installed: {', '.join(installed_backends())}", "",
            f"Command: `python -m benchmarks.bench_which_nuts {' '.join(argv if argv is not None else sys.argv[1:])}`",
            ""]
    body = []
    for name in args.models:
        body.append(measure(name, args))
        print(body[-1], flush=True)
    path = write_section(args.section, "\n".join(head) + "\n" + "\n\n".join(body))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

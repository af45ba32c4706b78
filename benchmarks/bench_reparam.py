"""Non-centring before estimating the evidence: ``estimate_evidence`` on centred hierarchical models,
as written and after :func:`pmcbandit.arms.evidence.reparam.non_centred`, at the same budget.

Run as ``.venv/bin/python -m benchmarks.bench_reparam`` (``--seconds 15 30``, ``--seeds 0 1 2``,
``--models hier100 eight_schools``, ``--seeds-long 0 1`` for the seeds of budgets above 15 s).

Models (centred, the funnel):

``hier100``        ``y_j ~ N(theta_j, s_j)``, ``theta_j ~ N(mu, tau)``, ``mu ~ N(0, 5)``, ``tau ~ HalfCauchy(5)``,
                   j = 1..100; ``s_j ~ U(5, 20)`` and ``y_j`` drawn from the model at ``mu = 3``, ``tau = 4``
                   (seed 2024). Exact ``log Z``: ``theta`` and ``mu`` integrated analytically,
                   ``y | tau ~ N(0, diag(tau^2 + s^2) + 25 * 11^T)`` (matrix determinant lemma and
                   Sherman–Morrison), then ``tau`` by adaptive quadrature (QUADPACK), checked by Gauss–Legendre
                   over ``log tau``; the difference of the two is the reference's error.
``eight_schools``  :func:`models.evidence_suite.eight_schools_centred` and its reference.

Every run is ``estimate_evidence(model, arms=evidence_arms(model, budget_seconds=seconds),
budget=seconds, random_seed=seed)``: the default pool sized for the budget, Thompson sampling; the pool
is built before the call so that the budget is the pulls' alone on both forms (``estimate_evidence(model,
budget=seconds)`` would count building it, which on a loaded 2-core machine takes most of a 15 s budget;
the set-up seconds are reported), in this one process, one run at a time, the centred and the non-centred model of a seed side by side. Reported
per run: ``log Z``, its SE, ``z = (log Z_hat - log Z) / sqrt(se^2 + se_ref^2)``, the interval status,
the arms of the pool with their pulls and weights, the pool's notes (arms left out) and the setup
seconds.
"""

from __future__ import annotations

import argparse
import logging
import time
import warnings

import numpy as np
from scipy import integrate, special

from benchmarks._common import machine, utc_now, write_section

F = np.float64  # PyTensor keeps a Python float as a float32 constant
HIER_J, HIER_MU_SD, HIER_TAU_BETA, HIER_SEED = 100, 5.0, 5.0, 2024


def hier100_data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(HIER_SEED)
    s = rng.uniform(5.0, 20.0, HIER_J)
    theta = rng.normal(3.0, 4.0, HIER_J)
    return rng.normal(theta, s), s


def _log_marginal(tau, y, s, mu_sd):
    """``log N(y; 0, diag(tau^2 + s^2) + mu_sd^2 11^T)``, vectorised over ``tau``."""
    d = np.asarray(tau, dtype=float)[..., None] ** 2 + s**2
    s2 = mu_sd**2
    a = 1.0 + s2 * np.sum(1.0 / d, -1)
    quad = np.sum(y**2 / d, -1) - s2 * np.sum(y / d, -1) ** 2 / a
    return -0.5 * (y.size * np.log(2.0 * np.pi) + np.sum(np.log(d), -1) + np.log(a) + quad)


def _log_half_cauchy(t, beta):
    return np.log(2.0 / (np.pi * beta)) - np.log1p((np.asarray(t) / beta) ** 2)


def hier100_log_z() -> tuple[float, float]:
    """(log Z, error): QUADPACK over tau, checked by 2000-node Gauss–Legendre over log tau in [-25, 25]."""
    y, s = hier100_data()
    shift = float(_log_marginal(4.0, y, s, HIER_MU_SD) + _log_half_cauchy(4.0, HIER_TAU_BETA))

    def integrand(t):
        return np.exp(_log_marginal(t, y, s, HIER_MU_SD) + _log_half_cauchy(t, HIER_TAU_BETA) - shift)

    val, _ = integrate.quad(integrand, 0.0, np.inf, epsabs=0.0, epsrel=1e-12, limit=500, points=None)
    quad = shift + np.log(val)
    nodes, weights = np.polynomial.legendre.leggauss(2000)
    u = 25.0 * nodes  # log tau
    lw = np.log(25.0 * weights) + u  # dtau = tau du
    logf = _log_marginal(np.exp(u), y, s, HIER_MU_SD) + _log_half_cauchy(np.exp(u), HIER_TAU_BETA)
    gl = float(special.logsumexp(logf + lw))
    return float(quad), max(abs(float(quad) - gl), 1e-12)


def hier100_centred():
    import pymc as pm

    y, s = hier100_data()
    with pm.Model(coords={"group": np.arange(HIER_J)}) as model:
        mu = pm.Normal("mu", F(0.0), F(HIER_MU_SD))
        tau = pm.HalfCauchy("tau", F(HIER_TAU_BETA))
        theta = pm.Normal("theta", mu, tau, dims="group")
        pm.Normal("y", theta, s, observed=y, dims="group")
    return model


def cases():
    """``{name: (centred model builder, log Z, error)}``."""
    from models.evidence_suite import eight_schools_centred

    es = eight_schools_centred()
    return {
        "hier100": (hier100_centred, *hier100_log_z()),
        "eight_schools": (lambda: eight_schools_centred().model, es.log_z, es.log_z_se),
    }


def one_run(model, seconds: float, seed: int, log_z: float, err: float) -> dict:
    from pmcbandit.evidence.estimate import estimate_evidence, evidence_arms

    records: list[str] = []
    handler = logging.Handler(logging.INFO)
    handler.emit = lambda record: records.append(record.getMessage())
    log = logging.getLogger("pmcbandit")
    level = log.level
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        start = time.perf_counter()
        try:
            pool = evidence_arms(model, budget_seconds=float(seconds))
        finally:
            log.removeHandler(handler)
            log.setLevel(level)
        setup = time.perf_counter() - start
        start = time.perf_counter()
        res = estimate_evidence(model, arms=pool, budget=float(seconds), random_seed=seed, progressbar=False)
    wall = time.perf_counter() - start
    table = res.arm_table()
    arms = ", ".join(f"{n} {int(p)}/{w:.2f}" for n, p, w in zip(res.arm_names, table["pulls"], table["weight"]))
    se = float(res.log_z_se)
    return dict(log_z=float(res.log_z), se=se, z=(float(res.log_z) - log_z) / np.hypot(se, err),
                status=str(res.interval_status), arms=arms, setup=setup, wall=wall,
                notes=[r for r in records if "left out" in r] + [str(n) for n in res.notes],
                warnings=sorted({type(w.message).__name__ for w in caught}))


def _fmt(x, p=4):
    return f"{x:.{p}g}" if np.isfinite(x) else str(x)


def render(rows: list[dict], refs: dict, args, load: list[str]) -> str:
    lines = [
        "# Non-centring before estimate_evidence (bench_reparam)",
        "",
        f"Machine: {machine()}; {utc_now()}; load average (1, 5, 15 min) at the start and the end: "
        f"{load[0]} / {load[-1]}, the machine shared with other jobs (wall budgets, so the counts of pulls "
        "are what a busy machine gave; the centred and non-centred runs of a seed ran back to back).",
        f"Command: `.venv/bin/python -m benchmarks.bench_reparam --models {' '.join(args.models)} --seconds "
        f"{' '.join(str(s) for s in args.seconds)} --seeds {' '.join(map(str, args.seeds))} --seeds-long "
        f"{' '.join(map(str, args.seeds_long))}`",
        "",
        "Each run: `estimate_evidence(model, arms=evidence_arms(model, budget_seconds=seconds), budget=seconds, "
        "random_seed=seed, progressbar=False)`, `model` the centred model as written or `non_centred(model).model` "
        "(the default pool, built before the call so the budget is the pulls' alone). "
        "z = (log Ẑ − log Z) / sqrt(se² + se_ref²). Arms: name pulls/weight (the arms of the pool; Laplace arms "
        "absent = left out for want of an interior mode). Setup: seconds to build the pool.",
        "",
        "References: " + "; ".join(f"{k} log Z = {v[0]:.6f} ± {v[1]:.1g}" for k, v in refs.items()),
        "",
        "## Summary (per model and budget: mean over seeds)",
        "",
        "| model | budget | form | runs | mean se | rms z | max abs z | statuses | mean setup s | se ratio c/nc |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    keys = sorted({(r["model"], r["seconds"]) for r in rows}, key=lambda k: (list(refs).index(k[0]), k[1]))
    for model, sec in keys:
        group = {form: [r for r in rows if (r["model"], r["seconds"], r["form"]) == (model, sec, form)]
                 for form in ("centred", "non-centred")}
        mse = {f: float(np.mean([r["se"] for r in g])) if g else np.nan for f, g in group.items()}
        for form, g in group.items():
            if not g:
                continue
            zs = np.array([r["z"] for r in g])
            statuses = {}
            for r in g:
                statuses[r["status"]] = statuses.get(r["status"], 0) + 1
            ratio = _fmt(mse["centred"] / mse["non-centred"], 3) if form == "non-centred" else ""
            lines.append(f"| {model} | {sec:g} s | {form} | {len(g)} | {_fmt(mse[form], 3)} | "
                         f"{_fmt(float(np.sqrt(np.mean(zs**2))), 3)} | {_fmt(float(np.max(np.abs(zs))), 3)} | "
                         f"{statuses} | {np.mean([r['setup'] for r in g]):.1f} | {ratio} |")
    lines += ["", "## Every run", "",
              "| model | budget | seed | form | log Z | se | z | status | arms (pulls/weight) | setup s |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['model']} | {r['seconds']:g} s | {r['seed']} | {r['form']} | {r['log_z']:.4f} | "
                     f"{_fmt(r['se'], 3)} | {r['z']:+.2f} | {r['status']} | {r['arms']} | {r['setup']:.1f} |")
    lines += ["", "Pool notes (arms left out or shrunk), first run of each model, budget and form:", ""]
    seen = set()
    for r in rows:
        key = (r["model"], r["seconds"], r["form"])
        if key in seen:
            continue
        seen.add(key)
        lines.append(f"- {r['model']}, {r['seconds']:g} s, {r['form']}: "
                     + ("; ".join(n[:400] for n in r["notes"]) or "none") + f" (warnings: {r['warnings'] or 'none'})")
    return "\n".join(lines)


def _load() -> str:
    with open("/proc/loadavg") as fh:
        return " ".join(fh.read().split()[:3])


def main(argv=None) -> None:
    import pmcbandit  # noqa: F401  (configures PyTensor)
    from pmcbandit.arms.evidence.reparam import non_centred

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["hier100", "eight_schools"])
    parser.add_argument("--seconds", nargs="+", type=float, default=[15.0, 30.0])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--seeds-long", nargs="+", type=int, default=[0, 1], help="seeds of budgets above 15 s")
    parser.add_argument("--long-models", nargs="+", default=["hier100"], help="models run at budgets above 15 s")
    args = parser.parse_args(argv)
    all_cases = cases()
    refs = {k: (v[1], v[2]) for k, v in all_cases.items() if k in args.models}
    load, rows = [_load()], []
    for seconds in args.seconds:
        long = seconds > 15.0
        for seed in (args.seeds_long if long else args.seeds):
            for name in args.models:
                if long and name not in args.long_models:
                    continue
                build, log_z, err = all_cases[name]
                centred = build()
                t = time.perf_counter()
                nc = non_centred(centred)
                t_nc = time.perf_counter() - t
                for form, model in (("centred", centred), ("non-centred", nc.model)):
                    row = dict(model=name, seconds=seconds, seed=seed, form=form,
                               **one_run(model, seconds, seed, log_z, err))
                    if form == "non-centred":
                        row["notes"] = [f"non_centred replaced {nc.replaced} in {t_nc:.2f} s", *row["notes"]]
                    rows.append(row)
                    print(f"{name} {seconds:g}s seed {seed} {form}: log Z {row['log_z']:.4f} se {row['se']:.3g} "
                          f"z {row['z']:+.2f} {row['status']} [{row['arms']}] setup {row['setup']:.1f}s "
                          f"load {_load()}", flush=True)
                    load.append(_load())
                    write_section("bench_reparam", render(rows, refs, args, load))
    print(render(rows, refs, args, load))


if __name__ == "__main__":
    main()

"""The evidence calibration suite at equal wall time: ``estimate_evidence`` against repeated ``pm.sample_smc``
and two nested samplers (dynesty, nautilus).

Run as ``.venv/bin/python -m benchmarks.bench_evidence_suite`` (``--quick`` for a smoke run;
``--models``, ``--seconds``, ``--seeds``, ``--workers``, ``--methods`` to choose). For every model of
:data:`models.evidence_suite.SUITE`, every budget (15 s and 60 s of wall time by default), every seed
(20 by default) and every method, a FRESH Python process runs:

``pool``        ``estimate_evidence(model, budget=..., random_seed=seed)``: the default pool sized for the
                budget, Thompson sampling, paired cost-aware reward, inverse variance, the guards,
                reliability and consistency checks.
``pool_smc``    (not run by default) the same with :class:`~pmcbandit.arms.evidence.SMCArm` in the pool
                (``evidence_arms(model, smc=True, budget_seconds=seconds)``): does PyMC's SMC help as an arm?
``pool_no_pilot`` (not run by default) the default pool without its pilot-t arms (``evidence_arms(...,
                pilot_is=False)``, set-up counted as for ``pool``): what the moment-matched arms add
``pool_no_refine`` (not run by default) the default pool with the Laplace arms' proposal as fitted at the mode
                (``evidence_arms(..., refine=False)``): what the moment refinement adds
``sample_smc``  what a PyMC user does: ``pm.sample_smc(model=m, cores=1)`` called repeatedly while the wall
                clock is under the budget, the estimate being the mean of all its chains' final
                ``log_marginal_likelihood`` and its SE their sd / sqrt(chains); a call that ends past the
                budget is dropped unless it is the only one.
``dynesty``     dynesty's static ``NestedSampler`` with its defaults, stopped at the budget
                (:func:`benchmarks._peers.run_dynesty`; error bar ``logzerr``).
``nautilus``    ``nautilus.Sampler`` with its defaults, ``run(timeout=...)`` (:func:`benchmarks._peers.run_nautilus`;
                error bar ``1/sqrt(n_eff)``).

The peers need the ``bench`` extra (``.venv/bin/pip install -e '.[bench]'``: dynesty, nautilus-sampler).
The peers get the model's log-likelihood and prior transform written per model in
:mod:`benchmarks._peers` (NumPy, checked against PyMC's density by the tests); the PyMC methods
get the PyMC model (built before the clock starts, as a user has it).

Timing (``--timing``): ``total`` (default) gives every method ``seconds`` of wall time FROM THE CALL
TO THE ANSWER, setup included: ``estimate_evidence``'s float budget counts building the default pool
(compilation, mode search; the pulls get what is left, at least a minimum share, so a long set-up
overshoots), ``pm.sample_smc``'s first call (compilation) counts (no untimed warm-up), and so does
the peers' construction; every run's wall time is measured from the call, so the overshoot column
shows what each really took. ``budget`` is the older rule: the pool's arms are built before the call
(``evidence_arms(model, budget_seconds=seconds)``, not counted, their seconds reported) and
``sample_smc`` has one untimed warm-up call (:func:`benchmarks.bench_evidence_vs_smc.run_sample_smc`);
the peers stay on ``total``.

``--workers`` processes run side by side (default 2, one per core of this machine). Each is held
to one core (``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``, ``MKL_NUM_THREADS``, ``NUMBA_NUM_THREADS`` = 1;
SMC's chains run in sequence, ``cores=1``), so every method gets one core, whatever runs beside it.
Worker slot ``k`` compiles into its own PyTensor compiledir (``PYTENSOR_FLAGS=compiledir=<root>/slot<k>``,
``--compiledir-root``), so many workers do not wait on one compile lock; before the timed runs every
model is compiled once (the models side by side, each into a compiledir of its own, then merged into slot 0: the default pool with a few pulls and one short ``pm.sample_smc``,
untimed) and slot 0 is copied to the others (``--no-warm`` skips this), so no timed run pays a cold
compilation that a user's second call would not. Tasks are ordered seed by
seed, so drift in the machine's speed hits every model, budget and method alike. ``--jsonl PATH``
appends every finished run to ``PATH`` as it finishes (one JSON object a line) and skips the tasks
already there, so a job killed at a time limit keeps what finished and can be resumed; a task whose
process fails is recorded with ``status="failed"`` (and its error), not retried.

Each pool run also records what the same pulls give through the combinations of :data:`OTHER_COMBINERS`
(``result.recombined(method)``: estimate, SE, interval and its status); ``--rescore FILE --combiner cross_fitted``
scores those readings in place of the run's own, so the two combinations are compared on the same pulls.

Reported per model and budget, against the suite's reference ``log Z`` (its own SE, if any, is
added in quadrature to every run's SE: a z-score is ``(log Ẑ - log Z) / sqrt(se² + se_ref²)``):
the count of 95 % intervals that contain the reference (``log_z_ci(0.95)`` for the pool; mean ±
1.96 SE for the others; a pool run whose interval status is not ``ok``/``random_effects`` and a
failed run count as not covering), the mean and the largest |z|, the MSE of ``log Ẑ`` (over the
runs that returned a finite estimate) and its ratio to the pool's, the largest wall-time overshoot
of the budget, and what the pool's runs reported (interval statuses, warnings). Goals for the pool:
no |z| > 4, coverage in [90 %, 98 %], MSE at most every peer's, overshoot at most 10 %. The markdown
is printed and written to ``benchmarks/results/bench_evidence_suite.md``; every run to
``bench_evidence_suite.json`` in ``--runs-dir`` (default ``benchmarks/out/``, not kept in the repository, nor
are ``--jsonl`` files).
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from benchmarks._common import RESULTS, add_runs_dir, machine, run_file, utc_now, write_section

MARK = "RESULT "
METHODS = ("pool", "sample_smc", "pool_smc", "pool_no_pilot", "pool_no_refine", "dynesty", "nautilus")
#: The default pool with one of ``evidence_arms``' settings switched: method -> (keyword, value, what it means).
ABLATIONS = {
    "pool_no_pilot": ("pilot_is", False, "without its pilot-t arms"),
    "pool_no_refine": ("refine", False, "with the Laplace arms' fit not refined"),
}
DEFAULT_METHODS = ("pool", "sample_smc", "dynesty", "nautilus")
TIMINGS = ("total", "budget")
SINGLE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1"}
#: Combinations each pool run is also read through (``result.recombined``), for ``--combiner``.
OTHER_COMBINERS = ("cross_fitted",)
#: Statuses whose interval counts: the pool's printed intervals, and every other method's own bar.
PRINTED = ("ok", "random_effects", "deadline")


# --- one task (runs in its own process) ---------------------------------------------------------
def run_pool(model, seconds: float, seed: int, smc: bool = False, timing: str = "total") -> dict:
    import warnings

    from pmcbandit.evidence.estimate import estimate_evidence, evidence_arms
    from pmcbandit.exceptions import PmcBanditWarning

    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", PmcBanditWarning)
        # "budget": the arms are built before the call, so the budget does not count them; "total" with the
        # default pool: a float budget is the time from the call to the answer, building the pool included.
        arms = evidence_arms(model, smc=smc, budget_seconds=seconds) if smc or timing == "budget" else None
        built = time.perf_counter() - start
        result = estimate_evidence(model, arms=arms, budget=seconds, random_seed=seed, progressbar=False)
    total = time.perf_counter() - start
    setup = float(result.settings["setup_seconds"]) + built
    table = result.arm_table()
    spent = np.nan_to_num(np.asarray(table["pulls"]) * np.asarray(table["cost"]))
    lo, hi = result.log_z_ci(0.95)
    families = result.settings.get("families") or []
    others = {}
    for method in OTHER_COMBINERS:  # the same pulls read through another combination (--combiner rescores them)
        other = result.recombined(method)
        others[method] = dict(log_z=other.log_z, log_z_se=other.log_z_se, ci=list(other.log_z_ci(0.95)),
                              status=other.interval_status)
    return dict(
        log_z=result.log_z,
        log_z_se=result.log_z_se,
        ci=[lo, hi],
        status=result.interval_status,
        setup=setup,
        wall=total if timing == "total" else total - built,
        stopped_by=result.settings["stopped_by"],
        pulls={str(a): int(n) for a, n in zip(table["arm"], table["pulls"])},
        cost_share={str(a): float(c / spent.sum()) for a, c in zip(table["arm"], spent)} if spent.sum() else {},
        khat={str(a): float(k) for a, k in zip(table["arm"], table["khat"]) if np.isfinite(k)},
        log_w_var={str(a): [float(v), int(n)] for a, v, n in zip(table["arm"], table["log_w_var"], table["n_weights"])
                   if np.isfinite(v)},
        arm_status={str(a): str(s) for a, s in zip(table["arm"], table["status"])},
        warnings=sorted({str(w.message)[:160] for w in caught if issubclass(w.category, PmcBanditWarning)}),
        # What benchmarks.bench_warnings scores (its --rescore reads these runs).
        issued=[(w.category.__name__, str(w.message)) for w in caught if issubclass(w.category, PmcBanditWarning)],
        topics=[getattr(m, "topic", "") for m in result.warnings()],
        notes=list(result.notes),
        pool_families=sorted(set(families) - {None}),
        compared_families=sorted({families[k] for k in result.consistency.compared if families[k] is not None}),
        quarantined=bool(result.quarantined.any()),
        run_seconds=float(result.settings.get("run_seconds", float("nan"))),
        combiners=others,
    )


def run_sample_smc_total(model, seconds: float, seed: int) -> dict:
    """``pm.sample_smc(cores=1)`` with PyMC's defaults, called repeatedly from the call until ``seconds``
    of wall time have passed, the first call's compilation included; a call that ends past the
    budget is dropped unless it is the only one. The mean and sd / sqrt(chains) of the chains' final
    log ML."""
    import pymc as pm

    from benchmarks.bench_evidence_vs_smc import _final_log_ml
    from pmcbandit.arms.evidence.smc import quiet_pymc

    start = time.perf_counter()
    rng = np.random.default_rng(seed)
    runs, calls = [], 0
    with quiet_pymc():
        while time.perf_counter() - start < seconds:
            idata = pm.sample_smc(model=model, progressbar=False, random_seed=int(rng.integers(2**31 - 1)), cores=1)
            if time.perf_counter() - start <= seconds or not runs:
                runs += _final_log_ml(idata)
                calls += 1
    se = float(np.std(runs, ddof=1) / np.sqrt(len(runs))) if len(runs) > 1 else float("nan")
    return dict(log_z=float(np.mean(runs)), log_z_se=se, pulls={"sample_smc chains": len(runs)}, calls=calls,
                wall=time.perf_counter() - start)


def worker(model_name: str, method: str, seconds: float, seed: int, timing: str = "total") -> dict:
    if method == "warm":
        return dict(warm(model_name), status="ok")
    if method in ("dynesty", "nautilus"):
        from benchmarks import _peers

        return (_peers.run_dynesty if method == "dynesty" else _peers.run_nautilus)(model_name, seconds, seed)
    import pmcbandit  # noqa: F401  (configures PyTensor first)
    from benchmarks.bench_evidence_vs_smc import run_sample_smc
    from models.evidence_suite import SUITE

    model = SUITE[model_name]().model
    if method in ABLATIONS:
        import functools

        import pmcbandit.evidence.estimate as ev

        keyword, value, _ = ABLATIONS[method]
        ev.build_pool = functools.partial(ev.build_pool, **{keyword: value})  # this worker process only
        return run_pool(model, seconds, seed, timing=timing)
    if method in ("pool", "pool_smc"):
        return run_pool(model, seconds, seed, smc=method == "pool_smc", timing=timing)
    if timing == "total":
        out = run_sample_smc_total(model, seconds, seed)
    else:
        out = run_sample_smc(model, seconds, seed, "wall", cores=1)
    lo, hi = out["log_z"] - 1.96 * out["log_z_se"], out["log_z"] + 1.96 * out["log_z_se"]
    return dict(out, ci=[lo, hi], status="ok")


def warm(model_name: str) -> dict:
    """Compile what the PyMC methods compile for ``model_name`` (untimed, not scored): the default pool's
    arms with a 10-step AIS (the same compiled functions as longer ones) and a few pulls, and one short
    ``pm.sample_smc`` call."""
    import warnings

    import pymc as pm

    import pmcbandit
    from models.evidence_suite import SUITE
    from pmcbandit.arms.evidence.smc import quiet_pymc
    from pmcbandit.evidence.estimate import estimate_evidence, evidence_arms
    from pmcbandit.exceptions import PmcBanditWarning

    start = time.perf_counter()
    model = SUITE[model_name]().model
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PmcBanditWarning)
        arms = evidence_arms(model, ais_steps=(10,))
        estimate_evidence(model, arms=arms, budget=pmcbandit.Pulls(2 * len(arms)), random_seed=0, progressbar=False)
    with quiet_pymc():
        pm.sample_smc(draws=100, model=model, progressbar=False, random_seed=0, cores=1, chains=1)
    return dict(wall=time.perf_counter() - start)


def warm_compiledirs(names, workers: int, root: Path) -> float:
    """Compile every model by :func:`warm`, up to ``workers`` models side by side, each in a compiledir of its
    own (``<root>/warm<i>``); merge them into slot 0's and copy that to the other slots (lock directories left
    out), so no timed run pays a cold PyTensor compilation. Returns the wall seconds."""
    import shutil

    start = time.perf_counter()
    ignore = shutil.ignore_patterns("lock_dir*", "*.lock")

    def one(job):
        i, name = job
        out = in_fresh_process(name, "warm", 0.0, 0, slot=f"warm{i}", compiledir_root=root)
        if out["status"] == "failed":
            raise RuntimeError(out["error"])
        print(f"compiledir warmed for {name} ({out['wall']:.0f} s)", file=sys.stderr, flush=True)

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        list(pool.map(one, enumerate(names)))
    for i in range(len(names)):
        shutil.copytree(root / f"slotwarm{i}", root / "slot0", dirs_exist_ok=True, ignore=ignore)
    for slot in range(1, workers):
        shutil.copytree(root / "slot0", root / f"slot{slot}", dirs_exist_ok=True, ignore=ignore)
    return time.perf_counter() - start


def compiledir_env(slot: int | str | None, root: Path | None) -> dict:
    """``PYTENSOR_FLAGS`` with ``compiledir=<root>/slot<slot>`` added (nothing when ``slot`` is None)."""
    if slot is None or root is None:
        return {}
    flags = [f for f in os.environ.get("PYTENSOR_FLAGS", "").split(",") if f and not f.startswith("compiledir=")]
    return {"PYTENSOR_FLAGS": ",".join([*flags, f"compiledir={Path(root) / f'slot{slot}'}"])}


def in_fresh_process(model_name: str, method: str, seconds: float, seed: int, timing: str = "total",
                     slot: int | str | None = None, compiledir_root: Path | None = None) -> dict:
    cmd = [
        sys.executable,
        "-m",
        "benchmarks.bench_evidence_suite",
        "--worker",
        model_name,
        method,
        "--seconds",
        str(seconds),
        "--seed",
        str(seed),
        "--timing",
        timing,
    ]
    root = Path(__file__).resolve().parent.parent
    env = dict(os.environ, **SINGLE_THREAD, **compiledir_env(slot, compiledir_root))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))
    task = dict(model=model_name, method=method, seconds=seconds, seed=seed, timing=timing)
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=root, env=env, timeout=20 * seconds + 1800)
    except subprocess.TimeoutExpired:
        return dict(task, **_failed(f"{' '.join(cmd)} timed out"))
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(MARK)]
    if proc.returncode != 0 or not lines:
        return dict(task, **_failed(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}"))
    return dict(json.loads(lines[-1][len(MARK) :]), **task)


def _failed(error: str) -> dict:
    nan = float("nan")
    return dict(log_z=nan, log_z_se=nan, ci=[nan, nan], status="failed", wall=nan, error=error)


def _task_key(run: dict) -> tuple:
    return run["model"], run["method"], float(run["seconds"]), int(run["seed"])


def read_runs(path: Path) -> list[dict]:
    """The runs saved in a ``.json`` file of this benchmark or a ``.jsonl`` file of ``--jsonl``."""
    text = Path(path).read_text()
    if str(path).endswith(".jsonl"):
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    return json.loads(text)["runs"]


# --- the report ------------------------------------------------------------------------------
def _kind(warning: str) -> str:
    """A warning's kind: its words before the first number, bracket or colon."""
    cut = len(warning)
    for mark in ("[", "(", ":", *"0123456789"):
        i = warning.find(mark)
        if i >= 0:
            cut = min(cut, i)
    return warning[:cut].strip(" ,;")


def interval_now(run: dict, references: dict | None = None) -> bool:
    """Give a saved pool run with status ``"ok"`` the interval :func:`pmcbandit.stats.combine.log_interval` gives its
    ``log_z`` and ``log_z_se`` today, with the t quantile ``q`` read off the saved interval: for runs saved before the
    log-normal rule, whose interval was ``log(Z-hat -+ q se)``. Returns whether the reference's coverage changed
    (False without ``references``).
    """
    from scipy import stats

    from pmcbandit.stats.combine import log_interval

    if run.get("method") != "pool" or run.get("status") != "ok" or not np.isfinite(run["log_z_se"]):
        return False
    lo, hi = run["ci"]
    r = run["log_z_se"]
    q = (np.exp(hi - run["log_z"]) - np.exp(lo - run["log_z"])) / (2.0 * r)
    level = 2.0 * stats.norm.cdf(q) - 1.0
    new = np.add(log_interval(1.0, r, np.inf, level), run["log_z"])
    before = None
    if references is not None:
        log_z, ref_se = references[run["model"]]
        before = lo - 1.96 * ref_se <= log_z <= hi + 1.96 * ref_se
    run["ci"] = [float(new[0]), float(new[1])]
    if before is None:
        return False
    return before != (new[0] - 1.96 * ref_se <= log_z <= new[1] + 1.96 * ref_se)


def as_combiner(runs: list[dict], method: str) -> list[dict]:
    """The pool runs read through the combination ``method`` their run recorded (``combiners``): each one's
    ``log_z``, ``log_z_se``, ``ci`` and ``status`` replaced by that reading; runs recorded without it are left out,
    and the other methods' runs kept as they are."""
    out = []
    for run in runs:
        if run.get("method") not in ("pool", *ABLATIONS, "pool_smc"):
            out.append(run)
        elif method in run.get("combiners", {}):
            out.append({**run, **run["combiners"][method]})
    return out


def summarise(runs: list[dict], references: dict) -> list[dict]:
    rows = []
    keys = sorted({(r["model"], r["seconds"]) for r in runs}, key=lambda k: (list(references).index(k[0]), k[1]))
    for model, seconds in keys:
        log_z, ref_se = references[model]
        row = dict(model=model, seconds=seconds)
        for method in METHODS:
            mine = [r for r in runs if (r["model"], r["seconds"], r["method"]) == (model, seconds, method)]
            if not mine:
                continue
            est = np.array([r["log_z"] for r in mine], dtype=float)
            finite = np.isfinite(est)
            se = np.hypot(np.array([r["log_z_se"] for r in mine], dtype=float), ref_se)
            with np.errstate(invalid="ignore", divide="ignore"):
                z = np.abs((est - log_z) / se)
            z = z[np.isfinite(z)]
            printed = np.array([r["status"] in PRINTED for r in mine])
            covered = np.array([r["ci"][0] - 1.96 * ref_se <= log_z <= r["ci"][1] + 1.96 * ref_se for r in mine])
            walls = np.array([r["wall"] for r in mine], dtype=float)
            walls = walls[np.isfinite(walls)]
            row[method] = dict(
                n=len(mine),
                finite=int(finite.sum()),
                mse=float(np.mean((est[finite] - log_z) ** 2)) if finite.any() else float("nan"),
                bias=float(np.mean(est[finite] - log_z)) if finite.any() else float("nan"),
                mean_abs_z=float(np.mean(z)) if z.size else float("nan"),
                max_abs_z=float(np.max(z)) if z.size else float("nan"),
                covered=int(np.sum(covered & printed)),
                unprinted=int(np.sum(~printed)),
                deadline=int(sum(r["status"] == "deadline" for r in mine)),
                failed=int(sum(r["status"] == "failed" for r in mine)),
                overshoot=float(np.max((walls - seconds) / seconds)) if walls.size else float("nan"),
                median_wall=float(np.median(walls)) if walls.size else float("nan"),
                statuses=dict(Counter(r["status"] for r in mine)),
                warnings=dict(Counter(_kind(w) for r in mine for w in set(r.get("warnings", [])))),
                setup=float(np.mean([r.get("setup", np.nan) for r in mine])),
                smc_share=float(
                    np.mean([sum(v for k, v in r.get("cost_share", {}).items() if k.startswith("smc")) for r in mine])
                ),
            )
        rows.append(row)
    return rows


def markdown(rows: list[dict], references: dict, args, command: str, elapsed: float) -> str:
    timing = {
        "total": "every method timed from the call to the answer, setup (compilation, mode search, the samplers' "
                 "construction) included",
        "budget": "the pool's budget does not count building the pool; sample_smc has one untimed warm-up call; "
                  "the peers are timed from the call",
    }.get(args.timing, "runs of both rules (see each run's `timing` in the JSON)")
    lines = [
        "## Evidence calibration suite: `estimate_evidence` vs `pm.sample_smc`, dynesty and nautilus at equal "
        "wall time",
        "",
        f"- machine: {machine()}; {args.workers} worker process(es) side by side, each held to one core",
        f"- date: {utc_now()}; this run took {elapsed / 60:.0f} min",
        f"- command: `{command}`",
        f"- seeds per model and budget: {args.seeds}; budgets (wall seconds): {', '.join(f'{s:g}' for s in args.seconds)}",
        f"- timing `{args.timing}`: {timing}",
        "- z = (log Ẑ - log Z) / sqrt(se² + se_ref²); 95 % intervals from `log_z_ci(0.95)` (pool), "
        "mean ± 1.96 SE over chains (sample_smc), log Ẑ ± 1.96 `logzerr` (dynesty), log Ẑ ± 1.96 / sqrt(n_eff) "
        "(nautilus); an interval the pool did not print (status `too_few_observations` / `no_reliable_arm`) "
        "and a failed run count as not covering; a peer stopped by the clock (`deadline`) is scored as it stands",
        "- goals: no |z| > 4; coverage 90-98 %; MSE(pool) <= every other method's; wall overshoot <= 10 %",
        "",
        "All methods side by side (MSE over the runs with a finite estimate; `finite/n`):",
        "",
        "| model | budget | method | covered / n | finite / n | stopped by clock | mean abs z | max abs z | MSE "
        "| MSE / pool's | bias | median wall (s) | max overshoot |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        base = row.get("pool")
        for method in METHODS:
            m = row.get(method)
            if m is None:
                continue
            ratio = f"{m['mse'] / base['mse']:.3g}x" if base and base["mse"] > 0 else "-"
            lines.append(
                f"| {row['model']} | {row['seconds']:g} s | {method} | {m['covered']}/{m['n']} | {m['finite']}/{m['n']} "
                f"| {m['deadline']} | {m['mean_abs_z']:.2f} | {m['max_abs_z']:.2f} | {m['mse']:.3g} | {ratio} "
                f"| {m['bias']:+.3g} | {m['median_wall']:.1f} | {100 * m['overshoot']:+.1f} % |"
            )
    lines += [
        "",
        "The pool against repeated `pm.sample_smc`:",
        "",
        "| model | budget | pool: covered / n | not printed | mean abs z | max abs z | MSE pool | MSE sample_smc "
        "| SMC / pool | SMC covered | max overshoot | setup (s) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        p, s = row.get("pool"), row.get("sample_smc")
        if p is None:
            continue
        ratio = f"{s['mse'] / p['mse']:.3g}x" if s else "-"
        smc_cov = f"{s['covered']}/{s['n']}" if s else "-"
        lines.append(
            f"| {row['model']} | {row['seconds']:g} s | {p['covered']}/{p['n']} | {p['unprinted']} | "
            f"{p['mean_abs_z']:.2f} | {p['max_abs_z']:.2f} | {p['mse']:.3g} | {s['mse'] if s else float('nan'):.3g} | "
            f"{ratio} | {smc_cov} | {100 * p['overshoot']:+.1f} % | {p['setup']:.1f} |"
        )
    with_smc = [row for row in rows if row.get("pool_smc") and row.get("pool")]
    if with_smc:
        lines += [
            "",
            "With PyMC's SMC as an arm of the pool (`pool_smc`), beside the default pool:",
            "",
            "| model | budget | covered / n | max abs z | MSE pool_smc | MSE pool | pool_smc / pool | SMC arm's cost share |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for row in with_smc:
            q, p = row["pool_smc"], row["pool"]
            lines.append(
                f"| {row['model']} | {row['seconds']:g} s | {q['covered']}/{q['n']} | {q['max_abs_z']:.2f} | "
                f"{q['mse']:.3g} | {p['mse']:.3g} | {q['mse'] / p['mse']:.3g}x | {q['smc_share']:.1%} |"
            )
    for method, (_, _, what) in ABLATIONS.items():
        pairs = [row for row in rows if row.get(method) and row.get("pool")]
        if not pairs:
            continue
        short = method.removeprefix("pool_").replace("_", " ")
        lines += [
            "",
            f"The default pool beside the same pool {what} (`{method}`):",
            "",
            f"| model | budget | covered / n pool | covered / n {short} | max abs z pool | max abs z {short} | "
            f"MSE pool | MSE {short} | {short} / pool | mean setup s pool / {short} |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for row in pairs:
            q, p = row[method], row["pool"]
            lines.append(
                f"| {row['model']} | {row['seconds']:g} s | {p['covered']}/{p['n']} | {q['covered']}/{q['n']} | "
                f"{p['max_abs_z']:.2f} | {q['max_abs_z']:.2f} | {p['mse']:.3g} | {q['mse']:.3g} | "
                f"{q['mse'] / p['mse']:.3g}x | {p['setup']:.1f} / {q['setup']:.1f} |"
            )
    lines += ["", "References: " + "; ".join(f"{m} {v[0]:.6f} ± {v[1]:.1g}" for m, v in references.items()), ""]
    lines.append("What the pool's runs reported (interval status counts; warnings by kind, count of runs):")
    lines.append("")
    for row in rows:
        p = row.get("pool")
        if p:
            warn = "; ".join(f"{k} ({v})" for k, v in sorted(p["warnings"].items())) or "none"
            lines.append(f"- {row['model']}, {row['seconds']:g} s: statuses {p['statuses']}; warnings: {warn}")
    failed = [(row["model"], row["seconds"], m, row[m]["failed"]) for row in rows for m in METHODS
              if row.get(m) and row[m]["failed"]]
    if failed:
        lines += ["", "Failed runs (process error or timeout; errors in the JSON): "
                  + "; ".join(f"{m} on {model} at {s:g} s: {n}" for model, s, m, n in failed)]
    return "\n".join(lines)


def _methods(values: list[str]) -> list[str]:
    """``--methods`` as one comma-separated list or several words."""
    out = [m for v in values for m in v.split(",") if m]
    bad = [m for m in out if m not in METHODS]
    if bad or not out:
        raise SystemExit(f"--methods must name some of {', '.join(METHODS)}; got {values!r}")
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, nargs="+", default=[15.0, 60.0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--models", nargs="+", default=None)
    parser.add_argument("--methods", nargs="+", default=[",".join(DEFAULT_METHODS)],
                        help=f"comma-separated, of {','.join(METHODS)} (default {','.join(DEFAULT_METHODS)})")
    parser.add_argument("--timing", choices=TIMINGS, default="total")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--compiledir-root", type=Path,
                        default=Path(tempfile.gettempdir()) / "pmcbandit-bench-evidence-suite",
                        help="worker slot k compiles into <root>/slot<k>")
    parser.add_argument("--no-warm", dest="warm", action="store_false",
                        help="skip compiling every model into the compiledirs before the timed runs")
    parser.add_argument("--jsonl", type=Path, default=None,
                        help="append every finished run to this file as it finishes; skip the tasks already in it")
    parser.add_argument("--quick", action="store_true", help="5 s runs, 2 seeds")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument(
        "--rescore",
        type=Path,
        nargs="+",
        default=None,
        metavar="JSON",
        help="re-summarise the runs saved in these .json / .jsonl files without running anything",
    )
    parser.add_argument("--interval-now", action="store_true",
                        help="with --rescore, for runs saved before the log-normal interval: give each pool run with "
                             "status 'ok' the interval of today's log_interval for its estimate and SE (the t "
                             "quantile read off the saved interval)")
    parser.add_argument("--combiner", choices=OTHER_COMBINERS, default=None,
                        help="with --rescore, score the pool runs as read through this combination (recorded with "
                             "each run by result.recombined), on the same pulls")
    parser.add_argument("--worker", nargs=2, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    add_runs_dir(parser)
    args = parser.parse_args(argv)
    if args.worker is not None:
        print(MARK + json.dumps(worker(args.worker[0], args.worker[1], args.seconds[0], args.seed, args.timing)))
        return 0
    args.methods = _methods(args.methods)
    from models.evidence_suite import SUITE

    names = args.models or list(SUITE)
    references = {}
    for name in names:
        m = SUITE[name]()
        references[name] = (float(m.log_z), float(m.log_z_se))
    if args.quick:
        args.seconds, args.seeds = [5.0], 2
    start = time.perf_counter()
    if args.rescore:
        runs = [r for path in args.rescore for r in read_runs(path)]
        runs = [r for r in runs if r["model"] in references]
        if args.combiner is not None:
            runs = as_combiner(runs, args.combiner)
        if args.interval_now:
            changed = sum(interval_now(r, references) for r in runs)
            print(f"--interval-now: {changed} run(s) of {len(runs)} change their verdict", file=sys.stderr)
        args.seeds = max(Counter((r["model"], r["seconds"], r["method"]) for r in runs).values())
        args.seconds = sorted({r["seconds"] for r in runs})
        # Runs saved before --timing existed were timed by the older rule.
        timings = {r.get("timing", "budget") for r in runs}
        args.timing = timings.pop() if len(timings) == 1 else "mixed"
    else:
        tasks = [
            (name, method, seconds, seed)
            for seed in range(args.first_seed, args.first_seed + args.seeds)
            for name in names
            for seconds in args.seconds
            for method in args.methods
        ]
        done: list[dict] = []
        if args.jsonl is not None and args.jsonl.exists():
            done = [r for r in read_runs(args.jsonl) if r.get("timing", "total") == args.timing]
            finished = {_task_key(r) for r in done}
            tasks = [t for t in tasks if (t[0], t[1], float(t[2]), int(t[3])) not in finished]
            done = [r for r in done if r["model"] in references and r["method"] in args.methods]
            print(f"{len(done)} runs read from {args.jsonl}; {len(tasks)} tasks to run", file=sys.stderr)
        pymc_methods = [m for m in args.methods if m in ("pool", "pool_smc", "sample_smc", *ABLATIONS)]
        if tasks and pymc_methods and args.warm:
            seconds = warm_compiledirs(sorted({t[0] for t in tasks}), args.workers, args.compiledir_root)
            print(f"compiledirs warmed in {seconds:.0f} s", file=sys.stderr, flush=True)
        slots: queue.Queue = queue.Queue()
        for k in range(args.workers):
            slots.put(k)
        lock = threading.Lock()

        def one(task):
            slot = slots.get()
            try:
                out = in_fresh_process(*task, timing=args.timing, slot=slot, compiledir_root=args.compiledir_root)
            finally:
                slots.put(slot)
            with lock:
                if args.jsonl is not None:
                    args.jsonl.parent.mkdir(parents=True, exist_ok=True)
                    with args.jsonl.open("a") as fh:
                        fh.write(json.dumps(out) + "\n")
                print(
                    f"{task}: log Z = {out['log_z']:.5f} ± {out['log_z_se']:.2g} ({out['status']}, "
                    f"wall {out['wall']:.1f} s)",
                    file=sys.stderr,
                    flush=True,
                )
            return out

        with ThreadPoolExecutor(args.workers) as pool:
            runs = done + list(pool.map(one, tasks))
    rows = summarise(runs, references)
    command = ".venv/bin/python -m benchmarks.bench_evidence_suite " + " ".join(
        argv if argv is not None else sys.argv[1:]
    )
    text = markdown(rows, references, args, command.strip(), time.perf_counter() - start)
    if not args.quick:
        out = args.out or RESULTS
        out.mkdir(parents=True, exist_ok=True)
        if args.out is None:
            write_section("bench_evidence_suite", text)
        else:
            (out / "bench_evidence_suite.md").write_text(text + "\n")
        if not args.rescore:
            run_file(args.runs_dir, "bench_evidence_suite.json").write_text(
                json.dumps(dict(command=command.strip(), runs=runs), indent=1)
            )
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

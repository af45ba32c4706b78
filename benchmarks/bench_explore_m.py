"""EXPLORE-m: Kalyanakrishnan & Stone (2010) Figs. 2–3 at scale, pulls to stop, and the simulator's speed.

Run as ``.venv/bin/python -m benchmarks.bench_explore_m`` (``--quick`` for a smoke run; ``--trials``
(default 1000), ``--workers`` (default 2) to choose). Everything runs in the stopping-time
simulator (:mod:`pmcbandit.identification.simulate`), which shares the algorithms' state machines
with the live loop and replays it pull for pull (``tests/identification/test_explore_m.py``).

Instances (K&S Sec. 5): arms uniform with standard deviation 1 (support width :math:`\\sqrt{12}`,
which every bound uses), means drawn once from U[0, 1] (``numpy.random.default_rng(2010)``);
instance A: n = 50, m = 15, epsilon = 0.1, delta = 0.15; instance B: n = 10, m = 3, epsilon = 0,
delta = 0.15. Each trial has its own reward and decision streams.

1. **Closed forms**: DIRECT, HALVING and INCREMENTAL pulls on instance A with range² = 12 and 1.
2. **Fig. 2**: mean :math:`\\delta^{\\hat c}` and NSS every 1,000 pulls up to 30,000 for
   :math:`\\pi_1`–:math:`\\pi_4` (runs continue past their stop, as K&S's curves do), the pulls
   per arm at 30,000 (arms in decreasing order of true mean), and the paper's claims.
3. **Fig. 3**: NSS of OCBA-m with n0 in {20, 100, 500} and RACING with R in {1, 10, 100, 500}
   against UNIFORM (:math:`\\pi_1`, which pulls uniformly at random until an arm reaches DIRECT's
   count, far beyond 30,000 pulls here); instance B with RACING (R = 1), ADAPT and UNIFORM.
4. **Pulls to stop** on both instances (capped; the share that stopped is given): mean with a 95 %
   t interval and median over the trials that stopped; their error rate against
   :math:`(\\epsilon, m)`-optimality (OCBA-m has no guarantee: its rate is reported, not judged).
   DIRECT and HALVING are deterministic: their closed forms, checked by a few simulated trials.
5. **Why ADAPT needs more than ~22,000 pulls here**: an oracle that knows the true means and
   variances, picks the best cutoff and spends pulls greedily where they lower
   :math:`\\delta^{c}` most, with the same bounds; its pulls to :math:`\\delta^c \\le 0.15` bound
   what any sampling policy with these bounds can reach, at widths :math:`\\sqrt{12}`, 2 and 1.
6. **Throughput** at n = 50: simulated samples per CPU second of each algorithm (goal >= 5 M).
7. **Kernels side by side** (``--throughput``, one thread): ADAPT pi1-pi4 and OCBA-m (n0 = 20) on instance A
   with the working tree's package and with the package of the revision ``--against REV``
   (:mod:`benchmarks._revision`; each configuration in a fresh process per revision, best of three, the same
   streams), and whether the runs are identical (samples, stops, choices, counts per arm and guarantees). The
   default revision, :data:`PREVIOUS_KERNELS`, is the last commit before the kernels' rewrite (the cutoff
   recomputed after every pull, pi2's candidates re-scanned over all arms after every pull, square roots by
   library call); its levels use the library's ``math.exp`` where the working tree's use the kernels' own
   exponential (within one unit in the last place), so a run whose decision hangs on that last bit may differ.
   Beside them ``parallel=True`` on ``--threads`` numba threads (default: every core), samples per wall second;
   and a moved cutoff's exponentials with the kernels' exponential and with the library's ``math.exp``.

Writes ``benchmarks/results/bench_explore_m.md`` and ``bench_explore_m.png`` (the figures), and every cell to
``bench_explore_m.json`` in ``--runs-dir`` (default ``benchmarks/out/``, not kept in the repository). ``--throughput`` runs item 7 only and replaces the section
"Kernels side by side" at the end of ``bench_explore_m.md`` (appending it the first time).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np
from scipy import stats

from benchmarks import _revision
from benchmarks._common import RESULTS, add_runs_dir, machine, run_file, utc_now, write_section

WIDTH = math.sqrt(12.0)
GRID = np.arange(1000, 30001, 1000)
INSTANCES = {"A": dict(n=50, m=15, epsilon=0.1, delta=0.15), "B": dict(n=10, m=3, epsilon=0.0, delta=0.15)}
STOP_CAP = 500_000
#: The last commit with the EXPLORE-m kernels before their rewrite (the parent of the rewrite's first commit).
PREVIOUS_KERNELS = "e2756d3"


def instance_means(n: int) -> np.ndarray:
    return np.random.default_rng(2010).uniform(0.0, 1.0, n)


def build(name: str, inst: dict, **kw):
    from pmcbandit.identification import get_identifier

    settings = dict(k=inst["m"], delta=inst["delta"], reward_range=WIDTH)
    if name != "racing":
        settings["epsilon"] = inst["epsilon"]
    return get_identifier(name, **settings, **kw)


# configurations: label -> (algorithm, its extra settings)
POLICIES = {f"pi{p}": ("adapt", {"policy": p}) for p in (1, 2, 3, 4)}
OCBA = {f"OCBA-m n0={n0}": ("ocba_m", {"n0": n0}) for n0 in (20, 100, 500)}
RACING = {f"RACING R={r}": ("racing", {"rounds": r}) for r in (1, 10, 100, 500)}


def _trace_task(args):
    from pmcbandit.identification.simulate import simulate_trace

    inst_name, label, name, kw, reps, seed = args
    inst = INSTANCES[inst_name]
    tr = simulate_trace(build(name, inst, **kw), instance_means(inst["n"]), GRID, reps=reps, random_seed=seed)
    return inst_name, label, tr.delta_hat, tr.nss, tr.stop_samples, tr.counts


def _stop_task(args):
    from pmcbandit.identification.simulate import simulate_stopping

    inst_name, label, name, kw, reps, seed, cap = args
    inst = INSTANCES[inst_name]
    t0 = time.process_time()
    res = simulate_stopping(
        build(name, inst, **kw),
        instance_means(inst["n"]),
        reps=reps,
        family="uniform",
        scale=1.0,
        random_seed=seed,
        max_samples=cap,
    )
    cpu = time.process_time() - t0
    return inst_name, label, res.samples, res.stopped, res.correct, res.guaranteed, cpu


def _chunks(trials, workers):
    size = -(-trials // (2 * workers))
    return [min(size, trials - i) for i in range(0, trials, size)]


def run_pool(fn, tasks, workers):
    if workers == 1:
        return [fn(t) for t in tasks]
    with ProcessPoolExecutor(workers) as pool:
        return list(pool.map(fn, tasks))


def merge(results):
    out = {}
    for res in results:
        key = tuple(res[:2])
        parts = res[2:]
        if key not in out:
            out[key] = [[p] for p in parts]
        else:
            for acc, p in zip(out[key], parts):
                acc.append(p)
    return {k: [np.concatenate(v) if isinstance(v[0], np.ndarray) else sum(v) for v in vals] for k, vals in out.items()}


def mean_ci(x):
    x = np.asarray(x, dtype=float)
    if x.size < 2:
        return float(x.mean()) if x.size else math.nan, math.nan
    return float(x.mean()), float(stats.t.ppf(0.975, x.size - 1) * x.std(ddof=1) / math.sqrt(x.size))


def first_below(grid, curve, level):
    hit = np.nonzero(curve <= level)[0]
    return int(grid[hit[0]]) if hit.size else None


# --- the oracle of item 5 --------------------------------------------------------------------------
def _oracle_levels(d, n, width):
    """delta^c_(i) of every arm at once (NumPy over arms, variance 1): the bound of
    :func:`pmcbandit.identification.radii.hoeffding_level` and ``empirical_bernstein_level``,
    vectorised here because the greedy oracle evaluates it for all arms thousands of times."""
    e = 2 * n * d * d / width**2
    b = np.sqrt(2.0 / n)  # variance 1
    x = 2 * d / (b + np.sqrt(b * b + 12 * width / n * d))
    e = np.maximum(e, x * x - math.log(3.0))
    return np.where(d <= 0, 1.0, np.where(e > 0, np.exp(-np.maximum(e, 0.0)), 1.0))


def oracle_pulls(means, m, eps, width, target=0.15, chunk=10):
    order = np.argsort(-means)
    high = np.isin(np.arange(means.size), order[:m])
    lo, hi = means[order[m]], means[order[m - 1]] + eps
    best = math.inf
    for c in np.linspace(lo, hi, 12)[1:-1]:
        d = np.where(high, means + eps - c, c - means)
        n = np.full(means.size, 2.0)
        level = _oracle_levels(d, n, width)
        while 1 - np.prod(1 - level) > target:
            gain = level - _oracle_levels(d, n + chunk, width)
            n[int(np.argmax(gain))] += chunk
            level = _oracle_levels(d, n, width)
        best = min(best, n.sum())
    return int(best)


# --- the report -------------------------------------------------------------------------------------
def figure(traces, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(2, 3, figsize=(15, 8))
    for label in POLICIES:
        dh, nss, _, counts = traces[("A", label)]
        ax[0, 0].plot(GRID, dh.mean(axis=0), label=label)
        ax[0, 1].plot(GRID, nss.mean(axis=0), label=label)
        order = np.argsort(-instance_means(50))
        ax[0, 2].plot(np.arange(1, 51), counts.mean(axis=0)[order], drawstyle="steps-mid", label=label)
    ax[0, 0].axhline(0.15, color="k", lw=0.5)
    ax[0, 0].set(title="Fig. 2(a): mean delta-hat, instance A", xlabel="pulls", yscale="log")
    ax[0, 1].set(title="Fig. 2(b): mean NSS", xlabel="pulls")
    ax[0, 2].set(title="Fig. 2(c): pulls per arm at 30,000", xlabel="arm (decreasing true mean)")
    for label in ["pi1", "pi4", *OCBA]:
        ax[1, 0].plot(GRID, traces[("A", label)][1].mean(axis=0), label="UNIFORM (pi1)" if label == "pi1" else label)
    for label in ["pi1", "pi4", *RACING]:
        ax[1, 1].plot(GRID, traces[("A", label)][1].mean(axis=0), label="UNIFORM (pi1)" if label == "pi1" else label)
    for label in ["pi4", "OCBA-m n0=20", "RACING R=1"]:
        order = np.argsort(-instance_means(50))
        ax[1, 2].plot(np.arange(1, 51), traces[("A", label)][3].mean(axis=0)[order], drawstyle="steps-mid", label=label)
    ax[1, 0].set(title="Fig. 3(a): NSS, OCBA-m", xlabel="pulls")
    ax[1, 1].set(title="Fig. 3(b): NSS, RACING", xlabel="pulls")
    ax[1, 2].set(title="Fig. 3(c): pulls per arm at 30,000", xlabel="arm (decreasing true mean)")
    for a in ax.flat:
        a.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


SIDE_BY_SIDE = {**POLICIES, "OCBA-m n0=20": OCBA["OCBA-m n0=20"]}
SIDE_HEADING = "### Kernels side by side"


def _exponential_passes(repeats: int = 200_000) -> tuple[float, float]:
    """Nanoseconds per arm of a moved cutoff's exponentials over 50 arms, best of three: the kernels' branch-free
    :func:`~pmcbandit.identification.explore_kernels._exp` and the library's ``math.exp`` behind the level's branch.
    """
    import numba

    from pmcbandit.identification import explore_kernels as ek

    @numba.njit
    def kernels(e, out, n):
        for j in range(n):
            e[j % e.shape[0]] += 1e-12  # inputs that change, as a moved cutoff's do
            for i in range(e.shape[0]):
                out[i] = ek._exp(-max(e[i], 0.0))

    @numba.njit
    def library(e, out, n):
        for j in range(n):
            e[j % e.shape[0]] += 1e-12
            for i in range(e.shape[0]):
                out[i] = math.exp(-e[i]) if e[i] > 0.0 else 1.0

    e = np.random.default_rng(0).exponential(size=50) * 10.0
    out = np.empty(50)
    best = []
    for fn in (kernels, library):
        fn(e, out, 10)
        times = []
        for _ in range(3):
            c0 = time.process_time()
            fn(e, out, repeats)
            times.append(time.process_time() - c0)
        best.append(min(times) / repeats / e.shape[0] * 1e9)
    return best[0], best[1]


def kernel_runs(label: str, reps: int, cap: int, seed: int, threads: int = 0) -> dict:
    """Item 7 in one process, with whichever :mod:`pmcbandit` it imports (:mod:`benchmarks._revision`): the
    configuration ``label`` of :data:`SIDE_BY_SIDE` on instance A, compiled by a short run, then timed three
    times (best CPU-second rate); a SHA-256 of every array of the runs, so that runs of two revisions can be
    compared; with ``threads``, also ``parallel=True`` on that many numba threads (best of two, samples per wall
    second, seed ``seed + 4``) and whether its runs on ``seed`` equal the serial ones.
    """
    import hashlib

    import numba

    from benchmarks._revision import package_revision
    from pmcbandit.identification.simulate import simulate_stopping

    inst = INSTANCES["A"]
    means = instance_means(inst["n"])
    name, kw = SIDE_BY_SIDE[label]
    algo = build(name, inst, **kw)
    simulate_stopping(algo, means, reps=1, family="uniform", scale=1.0, random_seed=0, max_samples=1000)  # compile
    common = dict(family="uniform", scale=1.0, max_samples=cap)
    best = 0.0
    for _ in range(3):
        c0 = time.process_time()
        res = simulate_stopping(algo, means, reps=reps, random_seed=seed, **common)
        best = max(best, res.samples.sum() / (time.process_time() - c0))
    digest = hashlib.sha256(b"".join(np.ascontiguousarray(a).tobytes() for a in res)).hexdigest()
    out = dict(rate=float(best), digest=digest, package=package_revision())
    if threads:
        numba.set_num_threads(threads)
        same = simulate_stopping(algo, means, reps=reps, random_seed=seed, parallel=True, **common)
        wall = 0.0
        for _ in range(2):
            w0 = time.perf_counter()
            res = simulate_stopping(algo, means, reps=max(reps, 8 * threads), random_seed=seed + 4, parallel=True,
                                    **common)
            wall = max(wall, res.samples.sum() / (time.perf_counter() - w0))
        out.update(wall=float(wall), identical=hashlib.sha256(
            b"".join(np.ascontiguousarray(a).tobytes() for a in same)).hexdigest() == digest)
    return out


def side_by_side(reps: int, cap: int, threads: int = 0, against: str | None = PREVIOUS_KERNELS) -> list[str]:
    """Item 7: the working tree's EXPLORE-m kernels beside those of the revision ``against``
    (:mod:`benchmarks._revision`), per CPU second, one thread, each configuration in a fresh process per revision;
    with ``threads``, also ``parallel=True`` on that many numba threads (all cores), samples per wall second.
    """
    commit = _revision.resolve(against)
    lines = [
        SIDE_HEADING + " (instance A, n = 50; a fresh process per revision and configuration, one thread, best of"
        " three)",
        "",
        f"- machine: {machine()}; {utc_now()}; load average before: {os.getloadavg()[0]:.2f} "
        f"({os.cpu_count()} cores; 1-thread columns: CPU-second rates, best of three)",
        f"- previous: the package at `{commit[:12]}` (`--against`); new: the working tree",
        f"- {reps} trials per configuration, pulls to stop capped at {cap:,}, seed 7",
        "",
        "| algorithm | previous, M samples / CPU s | new, M samples / CPU s | speed-up | identical runs | goal |"
        + (" all cores, M samples / wall s | all cores / (1 thread, CPU s) | same runs |" if threads else ""),
        "|---|---|---|---|---|---|" + ("---|---|---|" if threads else ""),
    ]
    all_reps = max(reps, 8 * threads)
    ours, library = _exponential_passes()
    target = "benchmarks.bench_explore_m:kernel_runs"
    with _revision.checkout(commit) as previous:
        for label in SIDE_BY_SIDE:
            runs = {tag: _revision.call(where, target, label=label, reps=reps, cap=cap, seed=7,
                                        threads=threads if tag == "new" else 0)
                    for tag, where in (("new", None), ("previous", previous))}
            new, old = runs["new"]["rate"] / 1e6, runs["previous"]["rate"] / 1e6
            same = runs["new"]["digest"] == runs["previous"]["digest"]
            row = (f"| {label} | {old:.2f} | {new:.2f} | {new / old:.2f}x | {'yes' if same else 'NO'} | "
                   f">= 5 ({'met' if new >= 5 else 'not met'}) |")
            if threads:
                wall = runs["new"]["wall"] / 1e6
                row += f" {wall:.2f} | {wall / new:.1f}x | {'yes' if runs['new']['identical'] else 'NO'} |"
            lines.append(row)
    lines += [
        "",
        "Previous: the kernels before the change measured here (running sums and products of the levels kept from the "
        "pulled arm on, all levels recomputed when the cutoff moves, pi1's candidates and OCBA-m's allotments "
        "kept by `observe`). New: the cutoff is kept when a pull moves the ranking only on one side of ranks "
        "(m), (m+1) (the same inputs, the same number); pi2's candidates are kept from each arm's bound and the "
        "extremes over High and Low (rescanned only when the pulled arm held one and left it; otherwise one "
        "insertion or removal at a place found by counting; a rebuild writes every arm and counts the members, "
        "without branches); square roots are the processor's instruction instead of a library call (both "
        "correctly rounded); the uniform rewards' sqrt(3) is a constant; a moved cutoff computes every exponent "
        "in one branch-free pass (four arms at a time), every exponential in a second one with the kernels' own "
        "exponential (no call, no branch: it runs on vectors; within one unit in the last place of the correctly "
        "rounded value, where the library's `exp` is a call per arm), then in arm order the running product and "
        "sum (the same operations in the same order); pi3 and pi4 find the drawn "
        "arm by counting the running sums at or below the target instead of a bisection; OCBA-m counts the arms "
        "short of their allotment first (pull counts kept as floats) and takes a single short arm directly, "
        "summing shortfalls only when two or more are short; the decisions are inlined into the simulator loop; "
        "no row views in the hot path; the simulator's loop runs on views of its arrays that carry no reference "
        "count (the caller holds every array for the whole run), so passing the state to the inlined kernels on "
        "every pull and taking an arm's reward stream as a row do no atomic increments and decrements (each one "
        "a locked instruction that also holds back the loads and stores around it). The previous kernels take the "
        "kernels' exponential too, so that the two runs can be compared pull for pull. 'identical runs': samples, "
        "stops, choices, counts per arm and guarantees of the two are equal.",
        "",
        f"The exponentials of a moved cutoff over 50 arms, in the same run: {ours:.2f} ns per arm with the kernels' "
        f"exponential, {library:.2f} ns with the library's `math.exp` ({library / ours:.1f}x).",
    ]
    if threads:
        lines += [
            "",
            f"All cores: `simulate_stopping(..., parallel=True)` with `numba.set_num_threads({threads})` (numba.prange "
            f"over parts of the replications), {all_reps} trials (seed 11), best of two, total samples / wall seconds; "
            "'same runs': on the 1-thread trials (seed 7) its arrays equal the serial ones. Per core: the 'new' "
            "column (one thread, CPU seconds).",
        ]
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="40 trials, pulls to stop capped at 100,000")
    parser.add_argument("--throughput", action="store_true", help="item 7 only (the kernels side by side)")
    parser.add_argument("--side-trials", type=int, default=20, help="trials per configuration of item 7")
    parser.add_argument("--threads", type=int, default=os.cpu_count(),
                        help="numba threads of item 7's all-core column (default: every core; 0: none)")
    _revision.add_argument(parser, PREVIOUS_KERNELS, "EXPLORE-m kernels")
    add_runs_dir(parser)
    args = parser.parse_args(argv)
    if args.throughput:
        command = " ".join(
            [".venv/bin/python -m benchmarks.bench_explore_m", *(argv if argv is not None else sys.argv[1:])]
        )
        section = side_by_side(args.side_trials, STOP_CAP, args.threads, args.against) + ["", f"- command: `{command}`"]
        path = RESULTS / "bench_explore_m.md"
        text = path.read_text() if path.exists() else ""
        rest = ""
        if SIDE_HEADING in text:  # replace this section only; later ones (e.g. another machine's) stay
            start = text.index(SIDE_HEADING)
            end = text.find("\n### ", start + len(SIDE_HEADING))
            text, rest = text[:start], ("" if end < 0 else text[end:])
        write_section("bench_explore_m", text.rstrip() + "\n\n" + "\n".join(section) + rest)
        print("\n".join(section))
        return 0
    from pmcbandit.identification.schedules import direct_total, halving_total, incremental_total

    trials, cap = (40, 100_000) if args.quick else (args.trials, STOP_CAP)
    command = " ".join(
        [".venv/bin/python -m benchmarks.bench_explore_m", *(argv if argv is not None else sys.argv[1:])]
    )
    start = time.perf_counter()
    lines = [
        "## bench_explore_m: Kalyanakrishnan & Stone (2010) Figs. 2–3, pulls to stop, throughput",
        "",
        f"- machine: {machine()}; {utc_now()}; {args.workers} worker process(es)",
        f"- command: `{command}`",
        f"- {trials} trials per configuration; arms uniform, sd 1, bounds of width sqrt(12); means from "
        "`default_rng(2010).uniform(0, 1, n)`",
        "",
    ]
    lines += [
        "### Closed forms (instance A: n = 50, m = 15, epsilon = 0.1, delta = 0.15)",
        "",
        "| range² | DIRECT | HALVING | INCREMENTAL |",
        "|---|---|---|---|",
    ]
    for r2 in (12.0, 1.0):
        w = math.sqrt(r2)
        lines.append(
            f"| {r2:g} | {direct_total(50, 0.1, 0.15, w):,} | {halving_total(50, 15, 0.1, 0.15, w):,} | "
            f"{incremental_total(50, 15, 0.1, 0.15, w):,} |"
        )
    lines.append("")

    # --- traces (Figs. 2-3 and instance B) ---
    configs = [("A", label, *spec) for label, spec in {**POLICIES, **OCBA, **RACING}.items()]
    configs += [("B", label, *POLICIES[label]) for label in ("pi1", "pi4")] + [
        ("B", "RACING R=1", *RACING["RACING R=1"])
    ]
    configs += [("B", "OCBA-m n0=20", *OCBA["OCBA-m n0=20"])]
    tasks = []
    for ci, (inst, label, name, kw) in enumerate(configs):
        for j, reps in enumerate(_chunks(trials, args.workers)):
            tasks.append((inst, label, name, kw, reps, 10_000 * ci + j))
    traces = merge(run_pool(_trace_task, tasks, args.workers))
    at = {x: int(np.nonzero(GRID == x)[0][0]) for x in (10_000, 20_000, 30_000)}
    lines += [
        "### Fig. 2–3: instance A, means over trials (runs continue past their stop)",
        "",
        "| configuration | mean delta-hat at 10k / 20k / 30k | first grid point with mean delta-hat <= 0.15 | "
        "share stopped by 30k | median stop (of those) | NSS at 10k / 20k / 30k (± 95 %) |",
        "|---|---|---|---|---|---|",
    ]
    for label in {**POLICIES, **OCBA, **RACING}:
        dh, nss, stop, _ = traces[("A", label)]
        md = dh.mean(axis=0)
        hit = first_below(GRID, md, 0.15) if not np.isnan(md).all() else None
        stopped = (stop > 0) & (stop <= 30_000)
        nss_txt = (
            " / ".join(f"{nss[:, i].mean():.4f}" for i in at.values()) + f" (± {mean_ci(nss[:, at[30_000]])[1]:.4f})"
        )
        dh_txt = "—" if np.isnan(md).all() else " / ".join(f"{md[i]:.3g}" for i in at.values())
        lines.append(
            f"| {label} | {dh_txt} | {'—' if np.isnan(md).all() else (f'{hit:,}' if hit else '> 30,000')} | "
            f"{stopped.mean():.1%} | {('%d' % np.median(stop[stopped])) if stopped.any() else '—'} | {nss_txt} |"
        )
    lines.append("")
    nss30 = {label: traces[("A", label)][1][:, at[30_000]] for label in {**POLICIES, **OCBA, **RACING}}
    p34 = max(
        stats.mannwhitneyu(nss30[x], nss30[y], alternative="greater").pvalue
        for x in ("pi3", "pi4")
        for y in ("pi1", "pi2")
    )
    plateau = {
        label: float(traces[("A", label)][1][:, at[30_000]].mean() - traces[("A", label)][1][:, at[10_000]].mean())
        for label in OCBA
    }
    lines += [
        f"- pi3 and pi4 above pi1 and pi2 in NSS at 30,000 pulls: largest one-sided Mann–Whitney p over the "
        f"four pairs = {p34:.2g}",
        "- NSS gained from 10,000 to 30,000 pulls: "
        + ", ".join(f"{k} {v:+.4f}" for k, v in plateau.items())
        + f", pi4 {traces[('A', 'pi4')][1][:, at[30_000]].mean() - traces[('A', 'pi4')][1][:, at[10_000]].mean():+.4f}",
        "- RACING NSS at 30,000: " + ", ".join(f"{k.split()[-1]} {nss30[k].mean():.4f}" for k in RACING),
        "",
    ]
    lines += [
        "### Instance B (n = 10, m = 3, epsilon = 0, delta = 0.15)",
        "",
        "| configuration | mean NSS at 1k / 2k / 5k / 10k / 30k | share stopped by 30k |",
        "|---|---|---|",
    ]
    points = [int(np.nonzero(GRID == x)[0][0]) for x in (1000, 2000, 5000, 10_000, 30_000)]
    for label in ("pi1", "pi4", "RACING R=1", "OCBA-m n0=20"):
        _, nss, stop, _ = traces[("B", label)]
        lines.append(
            f"| {'UNIFORM (pi1)' if label == 'pi1' else label} | "
            + " / ".join(f"{nss[:, i].mean():.4f}" for i in points)
            + f" | {((stop > 0) & (stop <= 30_000)).mean():.1%} |"
        )
    lines.append("")
    for x, i in zip((1000, 2000, 5000), points):
        b_nss = {label: traces[("B", label)][1][:, i] for label in ("pi1", "pi4", "RACING R=1")}
        lines.append(
            f"- at {x:,} pulls: RACING R=1 above UNIFORM (one-sided Mann–Whitney) p = "
            f"{stats.mannwhitneyu(b_nss['RACING R=1'], b_nss['pi1'], alternative='greater').pvalue:.2g}; "
            f"RACING R=1 vs ADAPT (two-sided) p = "
            f"{stats.mannwhitneyu(b_nss['RACING R=1'], b_nss['pi4'], alternative='two-sided').pvalue:.2g}"
        )
    lines.append("")

    # --- pulls to stop ---
    stop_cfgs = [
        (inst, label, *spec)
        for inst in ("A", "B")
        for label, spec in {
            **POLICIES,
            "OCBA-m n0=20": OCBA["OCBA-m n0=20"],
            "RACING R=1": RACING["RACING R=1"],
        }.items()
    ]
    tasks = []
    for ci, (inst, label, name, kw) in enumerate(stop_cfgs):
        for j, reps in enumerate(_chunks(trials, args.workers)):
            tasks.append((inst, label, name, kw, reps, 20_000 + 10_000 * ci + j, cap))
    for ci, (inst, name) in enumerate([("A", "direct"), ("A", "halving")]):  # deterministic: a few trials
        tasks.append((inst, name.upper(), name, {}, 3, 90_000 + ci, 10**8))
    stops = merge(run_pool(_stop_task, tasks, args.workers))
    lines += [
        f"### Pulls to stop (cap {cap:,}; mean ± 95 % t interval and median over the trials that stopped)",
        "",
        "| instance | algorithm | stopped | mean ± 95 % | median | errors (epsilon, m) | no guarantee at the stop |",
        "|---|---|---|---|---|---|---|",
    ]
    throughput = {}
    for (inst, label), (samples, stopped, correct, guaranteed, cpu) in stops.items():
        mean, half = mean_ci(samples[stopped])
        interval = f"{mean:,.0f} ± {half:,.0f}" if stopped.sum() > 1 else "—"
        lines.append(
            f"| {inst} | {label} | {stopped.mean():.1%} | {interval} | "
            f"{f'{np.median(samples[stopped]):,.0f}' if stopped.any() else '—'} | "
            f"{int((~correct[stopped]).sum())}/{int(stopped.sum())} | {int((stopped & ~guaranteed).sum())} |"
        )
        if inst == "A":
            throughput[label] = samples.sum() / cpu
    lines += [
        "",
        f"- closed forms for comparison: DIRECT {direct_total(50, 0.1, 0.15, WIDTH):,}, HALVING "
        f"{halving_total(50, 15, 0.1, 0.15, WIDTH):,} (instance B has epsilon = 0, which DIRECT, HALVING "
        "and INCREMENTAL cannot take)",
        "",
    ]

    # --- oracle ---
    rng = np.random.default_rng(7)
    lines += [
        "### The oracle of item 5 (instance A's bounds; pulls to delta^c <= 0.15)",
        "",
        "| bound width | this instance | 8 other instances (median, range) |",
        "|---|---|---|",
    ]
    others = [rng.uniform(0, 1, 50) for _ in range(2 if args.quick else 8)]
    for width in (WIDTH, 2.0, 1.0):
        here = oracle_pulls(instance_means(50), 15, 0.1, width)
        rest = [oracle_pulls(mm, 15, 0.1, width) for mm in others]
        lines.append(f"| {width:.3g} | {here:,} | {np.median(rest):,.0f} ({min(rest):,}–{max(rest):,}) |")
    lines.append("")

    # --- throughput ---
    lines += [
        "### Throughput at n = 50 (instance A, pulls-to-stop runs; samples per CPU second)",
        "",
        "| algorithm | M samples / CPU s |",
        "|---|---|",
    ]
    for label, rate in throughput.items():
        lines.append(f"| {label} | {rate / 1e6:.2f} |")
    if not args.quick:
        lines += [""] + side_by_side(args.side_trials, cap, args.threads, args.against)
    lines += ["", f"Total wall time {time.perf_counter() - start:,.0f} s."]
    text = "\n".join(lines)
    if not args.quick:
        write_section("bench_explore_m", text)
        figure(traces, RESULTS / "bench_explore_m.png")
        summary = {
            f"{k[0]}|{k[1]}": dict(
                mean_delta_hat=np.nan_to_num(v[0].mean(axis=0)).tolist(), mean_nss=v[1].mean(axis=0).tolist()
            )
            for k, v in traces.items()
        }
        summary["grid"] = GRID.tolist()
        run_file(args.runs_dir, "bench_explore_m.json").write_text(json.dumps(summary, indent=1))
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

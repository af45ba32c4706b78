"""compare_samplers' rule vs the fixed-allocation protocol: pulls to a decision at equal confidence.

Both protocols use the same confidence sequences at the same delta
(:mod:`pmcbandit.compare.simulate`): the rule of :func:`pmcbandit.compare_samplers` (LUCB on the
log-efficiency intervals) stops when the top k separate; the fixed-allocation protocol draws a pair
of every arm per round until every two arms' intervals are disjoint. Arms are uniform estimators
``U(-s, s)`` with declared unit costs (efficiency 3/s^2), estimates bounded in [-1, 1] (exact
betting sequences) or not (asymptotic sequences). Each cell is ``runs`` seeded runs of both
protocols on the same seeds; the ratio is of mean pulls, with a 95 % bootstrap interval over runs.

    .venv/bin/python -m benchmarks.bench_compare            # 100 runs per cell
    .venv/bin/python -m benchmarks.bench_compare --quick    # 10 runs per cell
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from benchmarks._common import machine, utc_now, write_section
from pmcbandit.compare.efficiency import EfficiencyRule, default_min_pairs
from pmcbandit.compare.simulate import simulate_comparison

#: (label, spreads, k): efficiencies 3/s^2; the first k are the answer.
INSTANCES = [
    ("3 arms, eff. ratios 1.6 / 2.6", (0.2, 0.25, 0.4), 1),
    ("5 arms, geometric, ratio 1.5", tuple(0.2 * 1.5 ** (np.arange(5) / 2)), 1),
    ("10 arms, geometric, ratio 1.5", tuple(0.2 * 1.5 ** (np.arange(10) / 2)), 1),
    ("10 arms, top 3, ratio 1.5", tuple(0.2 * 1.5 ** (np.arange(10) / 2)), 3),
]
DELTA = 0.05


def _draw(spreads):
    spreads = np.asarray(spreads)

    def draw(rng, arm):
        x = rng.uniform(-spreads[arm], spreads[arm], 2)
        return x[0], x[1], 1.0, 1.0

    return draw


def _cell(spreads, k, exact: bool, runs: int, min_pairs: int):
    n = len(spreads)
    rule = EfficiencyRule(k=k, delta=DELTA, n_arms=n, variance_bound=2.0 if exact else None, costs=(1.0,) * n,
                          min_pairs=min_pairs)
    draw = _draw(spreads)
    out = {}
    for protocol in ("lucb", "fixed"):
        pulls, wrong, capped = [], 0, 0
        t0 = time.process_time()
        for seed in range(runs):
            res = simulate_comparison(rule, draw, np.random.default_rng(seed), protocol=protocol, max_pairs=2_000_000)
            pulls.append(res.pulls)
            capped += not res.stopped
            wrong += set(res.recommended.tolist()) != set(range(k))
        out[protocol] = dict(pulls=np.asarray(pulls, dtype=float), wrong=wrong, capped=capped,
                             cpu=time.process_time() - t0)
    return out


def _delta_checks(runs: int) -> list[str]:
    from tests.compare.test_delta_correctness import RULE, _errors
    from tests.tolerance import error_rate_lower, error_rate_upper

    rows = []
    for scale in (1.0, 0.3, 0.1, 0.05):
        wrong = _errors(RULE._replace(width_scale=scale), runs)
        upper, lower = error_rate_upper(wrong, runs), error_rate_lower(wrong, runs)
        rows.append(f"| {scale:g} | {runs} | {wrong} | {upper:.4f} | {lower:.4f} |")
        print(rows[-1], flush=True)
    return rows


def _ratio_ci(a, b, rng, reps=2000):
    idx = rng.integers(0, a.size, (reps, a.size))
    boot = a[idx].mean(axis=1) / b[idx].mean(axis=1)
    return a.mean() / b.mean(), np.quantile(boot, 0.025), np.quantile(boot, 0.975)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    runs = 10 if args.quick else 100
    rng = np.random.default_rng(0)
    rows = []
    cells = [(exact, default_min_pairs(exact)) for exact in (True, False)] + [(False, 3)]
    for label, spreads, k in INSTANCES:
        for exact, min_pairs in cells:
            cell = _cell(spreads, k, exact, runs, min_pairs)
            lu, fx = cell["lucb"], cell["fixed"]
            r, lo, hi = _ratio_ci(lu["pulls"], fx["pulls"], rng)
            rows.append(
                f"| {label} | {k} | {'exact (betting)' if exact else 'asymptotic'} | {min_pairs} | "
                f"{lu['pulls'].mean():,.0f} | "
                f"{fx['pulls'].mean():,.0f} | **{r:.2f}** [{lo:.2f}, {hi:.2f}] | {lu['wrong']} / {fx['wrong']} | "
                f"{lu['capped']} / {fx['capped']} |"
            )
            print(rows[-1], flush=True)
    checks = _delta_checks(1000 if not args.quick else 100)
    command = ".venv/bin/python -m benchmarks.bench_compare" + (" --quick" if args.quick else "")
    markdown = "\n".join([
        "## compare_samplers: pulls to a decision vs the fixed-allocation protocol",
        "",
        f"Machine: {machine()}. Date: {utc_now()}. Command: `{command}`.",
        "",
        f"{runs} seeded runs per cell (the same seeds for both protocols), delta = {DELTA}; arms U(-s, s) with unit "
        "declared costs; 'exact' bounds the estimates in [-1, 1] (betting confidence sequences), 'asymptotic' does "
        "not; 'min pairs' is the pairs of every arm before either protocol may stop (the default of "
        "compare_samplers, and 3 with asymptotic sequences to show why the default is 10). Ratio = mean pulls of compare_samplers' LUCB rule / mean pulls of the fixed protocol (a pair of every "
        "arm per round until every two intervals are disjoint), 95 % bootstrap interval over runs. Goal: ratio <= 0.5.",
        "",
        "| instance | k | sequences | min pairs | LUCB pulls | fixed pulls | ratio [95 %] | wrong (LUCB / fixed) | "
        "not stopped |",
        "|---|---|---|---|---|---|---|---|---|",
        *rows,
        "",
        "delta-correctness of the exact rule (the instance and rule of `tests/compare/test_delta_correctness.py`: "
        "spreads 0.2, 0.25, 0.4, estimates in [-0.4, 0.4], unit declared costs, delta = 0.1), wrong selections "
        "with the one-sided 95 % Clopper-Pearson bounds:",
        "",
        "| half-widths x | runs | wrong | upper bound | lower bound |",
        "|---|---|---|---|---|",
        *checks,
    ])
    write_section("bench_compare", markdown)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

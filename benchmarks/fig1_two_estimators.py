"""Fig. 1 of Neufeld et al. (2014): the 2-estimator scaled-Bernoulli experiment (Sec. 6.1, App. E).

Run as ``.venv/bin/python -m benchmarks.fig1_two_estimators`` (the default scale: 15
tiles x 128 runs x 10^5 rounds, about 10 CPU-minutes; 30-40 minutes on a busy shared 2-core machine) or with ``--reps R --rounds N`` for another
scale (the paper's is ``--reps 2000 --rounds 1000000``: KL-UCB's bisection and
Thompson's Gamma draws cost about 1 µs a round each, so that scale takes days of
CPU on 2 cores; see the report for the scale used). ``--quick`` runs a smoke
version in about a minute and writes to the git-ignored ``benchmarks/out/``.

For every tile (variance of the best estimator ``V_1``, extra variance ``dV`` of the
second) and policy (UCB1, UCB-V, KL-UCB, TS) it simulates ``R`` independent runs
of ``N`` rounds with :func:`pmcbandit.simulate.simulate` (rewards ``1 - X^2``,
``bounds=(0, 1)``) and computes the MSE-regret by the regret identity (Thm 1):
``R_n = E[T_2(n)] dV``. It saves

* ``benchmarks/results/fig1_tiles.png`` (which policy has the lowest regret at ``n``),
* ``benchmarks/results/fig1_suboptimal.png`` (``E[T_2(t)]`` vs ``t`` on the highlighted
  tile, bars = 0.5 % and 99.5 % empirical percentiles),
* ``benchmarks/results/fig1_two_estimators.md`` (the table of winners, the Thm 1 check
  and the comparison with the paper's findings), and ``fig1_two_estimators.npz`` (raw summaries) in
  ``--runs-dir`` (default ``benchmarks/out/``, not kept in the repository).
"""

from __future__ import annotations

import argparse
import datetime
import sys
import time
from pathlib import Path

import numpy as np

from pmcbandit.simulate.two_estimators import LABELS, plot_suboptimal, plot_tiles, run_grid, winners
from benchmarks._common import add_runs_dir, machine, run_file


RESULTS = Path(__file__).resolve().parent / "results"
QUICK_OUT = Path(__file__).resolve().parent / "out"  # smoke runs stay out of results/ (git-ignored)
V_BEST = (0.01, 0.03, 0.06, 0.10, 0.16)
V_EXTRA = (0.01, 0.03, 0.08)
HIGHLIGHT = (0.03, 0.03)
QUICK = dict(v_best=(0.02, 0.10), v_extra=(0.02, 0.10), reps=64, rounds=10_000, highlight=(0.02, 0.10))
HIGH_VARIANCE = 0.15  # "high variance": either estimator's variance >= this (of at most 1/4)


def paper_check(rows) -> list[str]:
    """Compare the winners with the paper's three statements (Sec. 6.1)."""
    high = [r for r in rows if r["v_best"] + r["v_extra"] >= HIGH_VARIANCE]
    low = [r for r in rows if r["v_best"] + r["v_extra"] < HIGH_VARIANCE]
    ts_high = sum(r["winner"] == "thompson" for r in high)
    ucbv_low = sum(r["winner"] == "ucb_v" for r in low)
    kl_beats_v = sum(r["regret"]["kl_ucb"] < r["regret"]["ucb_v"] for r in high)
    kl_wins = sum(r["winner"] == "kl_ucb" for r in rows)
    low_winners = ", ".join(f"{LABELS[p]} {sum(r['winner'] == p for r in low)}" for p in LABELS)
    return [
        f'* "TS best where either estimator has high variance" (V_2 >= {HIGH_VARIANCE}): TS wins '
        f"{ts_high} of {len(high)} such tiles.",
        f'* "UCB-V better with medium or low variance" (V_2 < {HIGH_VARIANCE}): UCB-V wins {ucbv_low} of '
        f"{len(low)} such tiles (winners there: {low_winners}).",
        f'* "KL-UCB out-performs UCB-V in high variance settings": KL-UCB < UCB-V on {kl_beats_v} of '
        f'{len(high)} high-variance tiles; "but was eclipsed by TS": KL-UCB wins {kl_wins} tile(s).',
    ]


LONG_TILES = ((0.01, 0.01), (0.03, 0.01), (0.06, 0.01))
LONG_MARK = "### Longer horizon, low-variance tiles"


def long_horizon(args, out: Path, command: str) -> str:
    """UCB-V vs TS on the low-variance tiles at 10^4, 10^5, 10^6 rounds: does the ranking turn?"""
    from pmcbandit.simulate.two_estimators import run_tile

    ck = [c for c in (10**4, 10**5, 10**6) if c <= args.rounds]
    start = time.perf_counter()
    lines = [
        LONG_MARK,
        "",
        f"Command: `{command}` ({args.reps} runs x {args.rounds:,} rounds per tile, seed "
        f"{args.seed}). Regret by Thm 1 +- SE; last column: paired difference TS - UCB-V at n.",
        "",
        "| V_1 | V_2 - V_1 | "
        + " | ".join(f"UCB-V n={c:g}" for c in ck)
        + " | "
        + " | ".join(f"TS n={c:g}" for c in ck)
        + " | TS - UCB-V at n |",
        "|---|---|" + "---|" * (2 * len(ck) + 1),
    ]
    for vb, dv in LONG_TILES:
        t = run_tile(
            vb, dv, args.rounds, args.reps, args.seed, policies=("ucb_v", "thompson"), checkpoints=ck, n_jobs=args.jobs
        )
        d = (t.final_sub[1] - t.final_sub[0]) * dv
        cells = [f"{r:.1f} +- {e:.1f}" for i in range(2) for r, e in zip(t.regret[i], t.regret_se[i])]
        lines.append(
            f"| {vb:g} | {dv:g} | "
            + " | ".join(cells)
            + f" | {d.mean():+.1f} +- {d.std(ddof=1) / np.sqrt(d.size):.1f} |"
        )
    lines += ["", f"Wall {time.perf_counter() - start:.0f} s."]
    section = "\n".join(lines) + "\n"
    out.mkdir(parents=True, exist_ok=True)
    md = out / "fig1_two_estimators.md"
    text = md.read_text() if md.exists() else ""
    text = text.split(LONG_MARK)[0].rstrip() + "\n\n" + section if text else section
    md.write_text(text)
    return section


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=100_000)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=20140621)
    parser.add_argument("--quick", action="store_true")
    add_runs_dir(parser)
    parser.add_argument(
        "--long-horizon",
        action="store_true",
        help="only UCB-V vs TS on the low-variance tiles (use with --reps 64 --rounds 1000000); "
        "appends a section to the results table",
    )
    args = parser.parse_args(argv)
    v_best, v_extra, highlight = V_BEST, V_EXTRA, HIGHLIGHT
    if args.quick:
        v_best, v_extra, highlight = QUICK["v_best"], QUICK["v_extra"], QUICK["highlight"]
        args.reps, args.rounds = QUICK["reps"], QUICK["rounds"]
    command = "python -m benchmarks.fig1_two_estimators " + " ".join(argv if argv is not None else sys.argv[1:])
    if args.long_horizon:
        print(long_horizon(args, QUICK_OUT if args.quick else RESULTS, command))
        return 0
    start_wall, start_cpu = time.perf_counter(), time.process_time()

    def progress(i, n, tile):
        print(
            f"tile {i}/{n} (V1={tile.v_best:g}, dV={tile.v_extra:g}) done after "
            f"{time.perf_counter() - start_wall:.0f} s",
            flush=True,
        )

    tiles = run_grid(v_best, v_extra, args.rounds, args.reps, args.seed, n_jobs=args.jobs, progress=progress)
    wall, cpu = time.perf_counter() - start_wall, time.process_time() - start_cpu
    rows = winners(tiles)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = QUICK_OUT if args.quick else RESULTS
    out.mkdir(parents=True, exist_ok=True)
    suffix = "_quick" if args.quick else ""
    fig, ax = plt.subplots(figsize=(6, 5))
    plot_tiles(tiles, ax, highlight=highlight)
    fig.tight_layout()
    fig.savefig(out / f"fig1_tiles{suffix}.png", dpi=120)
    fig, ax = plt.subplots(figsize=(6, 4.5))
    tile = next(t for t in tiles if np.allclose((t.v_best, t.v_extra), highlight))
    plot_suboptimal(tile, ax)
    fig.tight_layout()
    fig.savefig(out / f"fig1_suboptimal{suffix}.png", dpi=120)
    np.savez_compressed(
        run_file(args.runs_dir, f"fig1_two_estimators{suffix}.npz"),
        v_best=[t.v_best for t in tiles],
        v_extra=[t.v_extra for t in tiles],
        policies=list(tiles[0].policies),
        checkpoints=tiles[0].checkpoints,
        regret=[t.regret for t in tiles],
        regret_se=[t.regret_se for t in tiles],
        mse_regret=[t.mse_regret for t in tiles],
        mse_regret_se=[t.mse_regret_se for t in tiles],
        sub_mean=[t.sub_mean for t in tiles],
        sub_lo=[t.sub_lo for t in tiles],
        sub_hi=[t.sub_hi for t in tiles],
        final_sub=[t.final_sub for t in tiles],
    )

    names = tiles[0].policies
    lines = [
        "## Fig. 1: 2-estimator scaled-Bernoulli experiment (Neufeld et al. 2014, Sec. 6.1)",
        "",
        f"Machine: {machine()}. Date: {datetime.date.today().isoformat()}. Command: `{command}`.",
        f"Scale: {len(tiles)} tiles x {len(names)} policies x {args.reps} runs x {args.rounds:,} rounds "
        f"(paper: 2000 runs x 10^6 rounds); seed {args.seed}; wall {wall:.0f} s, CPU {cpu:.0f} s "
        f"({args.jobs} threads, shared machine).",
        "",
        "Arms `X_k = 0.5 + s_k (Z - 1/2)`, `Z ~ Bernoulli(1/2)`, `V_k = s_k^2/4`; rewards `1 - X^2` "
        "(`bounds=(0, 1)`). Regret by the regret identity (Thm 1) from the simulated pull counts, "
        "`R_n = E[T_2(n)] (V_2 - V_1)`; all policies share the replication seeds (common `Z_t`). "
        "`margin` = gap between winner and runner-up in SEs of their paired difference.",
        "",
        "| V_1 | V_2 - V_1 | " + " | ".join(f"{LABELS[p]} regret" for p in names) + " | winner | margin (SE) |",
        "|---|---|" + "---|" * len(names) + "---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['v_best']:g} | {r['v_extra']:g} | "
            + " | ".join(f"{r['regret'][p]:.1f}" for p in names)
            + f" | **{LABELS[r['winner']]}** | {r['margin_se']:.1f} |"
        )
    # Thm 1 check: measured MSE-regret vs identity, in units of the measured one's SE.
    z = np.concatenate([(t.mse_regret[:, -1] - t.regret[:, -1]) / t.mse_regret_se[:, -1] for t in tiles])
    lines += [
        "",
        "Theorem 1 check at n: (measured MSE-regret - identity) / SE(measured) over all "
        f"{z.size} tile-policy pairs: mean {z.mean():+.2f}, sd {z.std(ddof=1):.2f}, max |z| {np.abs(z).max():.2f} "
        "(each about N(0, 1) if the identity holds; they are strongly correlated, since every tile and "
        "policy reuses the same replication seeds, so judge max |z|, not the mean).",
        "",
        "Against the paper's findings:",
        *paper_check(rows),
        "",
        f"Figures: `benchmarks/{out.name}/fig1_tiles{suffix}.png` (pale tile: margin < 2 SE), "
        f"`benchmarks/{out.name}/fig1_suboptimal{suffix}.png` (tile V_1 = {highlight[0]:g}, dV = {highlight[1]:g}).",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    (out / f"fig1_two_estimators{suffix}.md").write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

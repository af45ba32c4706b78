"""Fig. 2 of Neufeld et al. (2014): normalised MSE of allocation strategies, CIR caplet.

Run as ``.venv/bin/python -m benchmarks.fig2_cir`` (full scale) or with
``--quick`` (minutes; what the notebook's quick mode calls). Writes
``benchmarks/results/fig2_cir.md`` and ``fig2_cir.png`` (``_quick`` suffixed in
quick mode).

Setting (Sec. 6.2, App. F): the 16 arms of :func:`models.cir.caplet_arms`
(θ_k = k/10, drift per unit time), strikes K ∈ {0.06, 0.07, 0.08}; UCB1,
UCB-V, KL-UCB, Thompson sampling, d-kernel PMC (:mod:`pmcbandit.policies.pmc`),
uniform, and the best fixed arm in hindsight (``oracle`` on the arm with the
smallest per-path variance in a pilot). Every policy of a repetition sees the
same paths (common random numbers).

One sample = one path = one pull, as in the paper. Here the run loop's
per-decision overhead would dominate (10⁵ decisions per run), so the figure
uses pmcbandit's replicated-run simulator on *pre-drawn* paths:
:class:`pmcbandit.simulate.RewardMatrix` holds, for each arm, ``max_samples``
weighted payoffs simulated by the arm itself (its PyTensor graph), and
:func:`pmcbandit.simulate.simulate` makes the decisions ``pmcbandit.run`` would
make (squared reward, Thm 2; running-mean centre, :mod:`pmcbandit.policies.centring`; adaptive scale). PMC
is not in the simulator: :func:`pmc_run` drives the policy's own
``select``/``update`` over the same pre-drawn paths (and their per-path PMC
fields), with a population of ``pmc_population`` paths.

Why single-path pulls. With batches of ``m`` paths per pull, forced exploration
alone (one pull of each of the 16 arms) adds ``m Σ_k V_k / n`` to MSE × n under
uniform averaging; for K = 0.06 the arms' per-path variances sum to about
3.8e3 (θ = 1.5 alone ≈ 1.7e3), so ``m = 100`` costs ≈ 3.8 at n = 10⁵ against
V* ≈ 1 for the best arm. ``--batched`` adds the same comparison through
:func:`pmcbandit.run` itself with ``paths_per_pull = 100`` (declared cost =
paths, ``Pulls`` budget), reported with the uniform and inverse-variance
combiners at the largest n.

Normalisation. The paper plots a "normalised MSE"; we plot ``MSE × n``
(n = samples so far): a fixed arm draws the flat line ``V_k`` and an
allocation's regret is its excess over the best arm's line (ratios at a given
n are the same under either normalisation). The estimate at n is the uniform
average of the observations so far (the estimator of the paper's regret
analysis). Its MSE has two estimates: by the regret identity of Thm 1 (Wald's
identity for an allocation that depends only on the past),
E[(S_n − nμ)²] = Σ_k V_k E[T_k(n)], i.e. MSE × n ≈ mean over repetitions of
Σ_k V_k T_k(n)/n with the pilot's per-path variances V_k — low-noise, used for
the ratios — and measured: the mean over repetitions of the squared error
against a reference price computed by the script: the best pilot arm run for
``reference_paths`` paths (its SE is reported; its square is far below the MSEs).
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

import pmcbandit  # noqa: F401  (configures PyTensor before anything imports it)

STRIKES = (0.06, 0.07, 0.08)
BANDITS = ("ucb1", "ucb_v", "kl_ucb", "thompson")
# Each bandit also under the other loss ranges of App. B (its default: pmcbandit.policies.ucb1).
OTHER_RANGES = ("ucb1/per_arm", "ucb_v/per_arm", "kl_ucb/shared", "thompson/shared")
POLICIES = BANDITS + ("pmc", "uniform", "best-arm") + OTHER_RANGES
RESULTS = Path(__file__).resolve().parent / "results"
_CHUNK = 10_000


def pilot(strike, paths_per_arm, reference_paths, seed):
    """Per-path variance of every arm and a reference price from the best one."""
    from models.cir import caplet_arms

    arms = caplet_arms(strike, paths_per_pull=_CHUNK, pmc_info=False)
    rng = np.random.default_rng(seed)
    variances = []
    for arm in arms:
        vals = np.concatenate([arm.pull(rng).values for _ in range(max(1, paths_per_arm // _CHUNK))])
        variances.append(vals.var(ddof=1))
    best = int(np.argmin(variances))
    n_pulls = max(2, reference_paths // _CHUNK)
    means = np.array([arms[best].pull(rng).values.mean() for _ in range(n_pulls)])
    return dict(
        variances=np.array(variances),
        best=best,
        price=float(means.mean()),
        price_se=float(means.std(ddof=1) / np.sqrt(n_pulls)),
    )


def draw_paths(strike, n_paths, seed):
    """``n_paths`` paths of every arm: weighted payoffs, and PMC's per-path h and statistic."""
    from models.cir import caplet_arms

    arms = caplet_arms(strike, paths_per_pull=min(_CHUNK, n_paths))
    streams = np.random.default_rng(seed).spawn(len(arms))
    shape = (len(arms), n_paths)
    values, h, stat = np.empty(shape), np.empty(shape), np.empty(shape)
    for k, (arm, rng) in enumerate(zip(arms, streams)):
        for start in range(0, n_paths, arm.paths_per_pull):
            p = arm.pull(rng)
            stop = min(start + p.values.size, n_paths)
            values[k, start:stop] = p.values[: stop - start]
            h[k, start:stop] = p.info["pmc_h"][: stop - start]
            stat[k, start:stop] = p.info["pmc_stat"][: stop - start]
    return values, h, stat, arms[0].pmc_coef


def pmc_run(values, h, stat, coef, n_rounds, population, checkpoints, seed):
    """d-kernel PMC over pre-drawn single-path pulls; running averages at ``checkpoints``."""
    from pmcbandit.policies.pmc import policy

    pol = policy(population_size=population)
    state = pol.init(values.shape[0])
    rng = np.random.default_rng(seed)
    nxt = np.zeros(values.shape[0], dtype=np.int64)
    total, centre, out = 0.0, None, []
    want = iter(checkpoints)
    target = next(want)
    for t in range(1, n_rounds + 1):
        k = pol.select(rng, state)
        j = nxt[k]
        nxt[k] += 1
        x = values[k, j]
        centre = x if centre is None else centre
        total += x
        info = {"pmc_h": h[k, j : j + 1], "pmc_stat": stat[k, j : j + 1], "pmc_coef": coef}
        state = pol.update(rng, state, k, -((x - centre) ** 2), 1.0, value=x, info=info)
        if t == target:
            out.append(total / t)
            target = next(want, -1)
    return np.array(out), nxt


def policy_spec(label: str, best: int) -> tuple[str, dict, str]:
    """A row label as (policy name, policy parameters, ranges): ``"best-arm"`` is the oracle on
    ``best``; ``"name/ranges"`` runs ``name`` under the given loss ranges, else ``"auto"``."""
    if label == "best-arm":
        return "oracle", {"arm": best}, "auto"
    name, _, ranges = label.partition("/")
    return name, {}, ranges or "auto"


def one_repetition(strike, rep, best, n_rounds, checkpoints, pmc_population, policies, seed):
    """Every policy on one set of pre-drawn paths: running averages at ``checkpoints`` and pull counts."""
    import warnings

    from pmcbandit.simulate import RewardMatrix, simulate

    values, h, stat, coef = draw_paths(strike, n_rounds, seed + 7919 * rep)
    matrix = RewardMatrix(values)
    out = {}
    for p in policies:
        pseed = seed * 1000 + rep
        if p == "pmc":
            out[p] = pmc_run(values, h, stat, coef, n_rounds, pmc_population, checkpoints, pseed)
            continue
        name, params, ranges = policy_spec(p, best)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = simulate(
                name, matrix, n_rounds, 1, pseed, checkpoints=checkpoints, policy_params=params, ranges=ranges
            )
        out[p] = (res.estimate_at[0], res.pulls[0])
    return out


def one_batched_run(strike, policy, best, n_pulls, paths_per_pull, seed, pmc_population):
    """One :func:`pmcbandit.run` with batches: (uniform, inverse-variance) estimates and pull counts."""
    import warnings

    from models.cir import caplet_arms
    from pmcbandit import Pulls, run

    arms = caplet_arms(strike, paths_per_pull=paths_per_pull, cost="paths", pmc_info=(policy == "pmc"))
    name, kwargs, ranges = policy_spec(policy, best)
    if policy == "pmc":
        kwargs = {"population_size": max(1, pmc_population // paths_per_pull)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = run(
            arms,
            name,
            budget=Pulls(n_pulls),
            combine="uniform",
            random_seed=seed,
            progressbar=False,
            policy_kwargs=kwargs,
            ranges=ranges,
        )
    counts = np.bincount(res.history.column("arm"), minlength=len(arms))
    return res.estimate, res.combined_with("inverse_variance").estimate, counts


def fig2(
    strikes=STRIKES,
    policies=POLICIES,
    reps=30,
    max_samples=100_000,
    pilot_paths=200_000,
    reference_paths=10_000_000,
    pmc_population=1000,
    batched_reps=0,
    paths_per_pull=100,
    jobs=2,
    seed=2014,
):
    """All runs of the figure; returns a dict per strike (see :func:`markdown`)."""
    checkpoints = np.unique(np.geomspace(16, max_samples, 30).astype(np.int64))
    out = {}
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        pilots = {k: pool.submit(pilot, k, pilot_paths, reference_paths, seed + i) for i, k in enumerate(strikes)}
        pilots = {k: f.result() for k, f in pilots.items()}
        futures = {
            (k, r): pool.submit(
                one_repetition,
                k,
                r,
                pilots[k]["best"],
                max_samples,
                checkpoints,
                pmc_population,
                policies,
                seed + 100 * i,
            )
            for i, k in enumerate(strikes)
            for r in range(reps)
        }
        batched = {
            (k, p, r): pool.submit(
                one_batched_run,
                k,
                p,
                pilots[k]["best"],
                max_samples // paths_per_pull,
                paths_per_pull,
                seed * 1000 + r,
                pmc_population,
            )
            for k in strikes
            for p in policies
            for r in range(batched_reps)
        }
        for k in strikes:
            price = pilots[k]["price"]
            runs = [futures[k, r].result() for r in range(reps)]
            res = {}
            for p in policies:
                err2 = (np.array([run[p][0] for run in runs]) - price) ** 2
                counts = np.array([run[p][1] for run in runs], dtype=np.float64)
                # Thm 1 / Wald: E[(S_n - n mu)^2] = sum_k V_k E[T_k(n)], so MSE x n has the low-noise
                # estimate sum_k V_k T_k(n) / n averaged over repetitions (V_k from the pilot).
                ident = counts @ pilots[k]["variances"] / max_samples
                res[p] = dict(
                    mse=err2.mean(axis=0),
                    mse_se=err2.std(axis=0, ddof=1) / np.sqrt(reps),
                    counts=counts.mean(axis=0),
                    identity=float(ident.mean()),
                    identity_se=float(ident.std(ddof=1) / np.sqrt(reps)),
                )
                if batched_reps:
                    b = [batched[k, p, r].result() for r in range(batched_reps)]
                    res[p]["batched_uniform"] = float(np.mean([(u - price) ** 2 for u, _, _ in b]))
                    res[p]["batched_iv"] = float(np.mean([(iv - price) ** 2 for _, iv, _ in b]))
            out[k] = dict(pilot=pilots[k], samples=checkpoints, policies=res)
    return out


def ratios(entry, key="identity", candidates=BANDITS):
    """MSE ratios at the largest sample size: best bandit / best arm and best bandit / PMC.

    ``key="identity"``: MSE × n by the regret identity (Thm 1), low noise; ``key="mse"``: the
    measured squared errors against the reference price. The best bandit is the best of
    ``candidates`` (default: the bandits under their default ranges).
    """
    pol = entry["policies"]

    def val(p):
        return pol[p][key] if key == "identity" else pol[p][key][-1]

    bandits = [b for b in candidates if b in pol]
    best_b = min(bandits, key=val)
    r = {"best_bandit": best_b}
    if "best-arm" in pol:
        r["vs_best_arm"] = val(best_b) / val("best-arm")
    if "pmc" in pol:
        r["vs_pmc"] = val(best_b) / val("pmc")
    return r


def plot(results, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(results), figsize=(5 * len(results), 4), squeeze=False)
    for ax, (k, entry) in zip(axes[0], results.items()):
        n = entry["samples"]
        for p, res in entry["policies"].items():
            ax.plot(
                n,
                res["mse"] * n,
                label=p,
                lw=2 if p in ("thompson", "pmc", "best-arm") else 1,
                ls="--" if "/" in p else "-",
            )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(f"K = {k}")
        ax.set_xlabel("samples (paths)")
        ax.set_ylabel("MSE × samples")
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def markdown(results, command, settings):
    lines = [
        "## fig2_cir: normalised MSE of allocation strategies, CIR caplet (Neufeld et al. 2014, Fig. 2)",
        "",
        f"- command: `{command}`",
        f"- date: {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}; "
        f"{os.cpu_count()} cores",
        f"- settings: {settings}",
        "- one sample = one path = one pull (pre-drawn paths, pmcbandit.simulate; PMC by its own policy "
        "functions); normalised MSE = MSE × n; uniform average of the observations.",
        "- loss ranges (App. B): each bandit row runs with its default, per arm for thompson and kl_ucb, "
        'shared for ucb1 and ucb_v; rows `name/ranges` run it under the other choice. "Best bandit" is '
        "chosen among the defaults.",
        "",
    ]
    for k, entry in results.items():
        pil = entry["pilot"]
        n = entry["samples"][-1]
        pols = entry["policies"]
        batched = "batched_uniform" in next(iter(pols.values()))
        head = (
            f"| policy | Σ V_k T_k/n at n = {n:.0e} (Thm 1) | ± (SE) | measured MSE × n at n = {n:.0e} | ± (SE) "
            f"| measured MSE × n at n = {entry['samples'][len(entry['samples']) // 2]} | share of pulls on best arm |"
        )
        rule = "|---|---:|---:|---:|---:|---:|---:|"
        if batched:
            head += " run(), 100 paths/pull: MSE × n uniform | IV |"
            rule += "---:|---:|"
        lines += [
            f"### K = {k}: reference price {pil['price']:.6g} ± {pil['price_se']:.2g} "
            f"(arm θ = {pil['best'] / 10:.1f}, per-path variance {pil['variances'][pil['best']]:.3g}; "
            f"θ = 0: {pil['variances'][0]:.3g}; sum over arms {pil['variances'].sum():.3g})",
            "",
            head,
            rule,
        ]
        mid = len(entry["samples"]) // 2
        for p, res in pols.items():
            share = res["counts"][pil["best"]] / res["counts"].sum()
            row = (
                f"| {p} | {res['identity']:.4g} | {res['identity_se']:.2g} | {res['mse'][-1] * n:.4g} | "
                f"{res['mse_se'][-1] * n:.2g} | "
                f"{res['mse'][mid] * entry['samples'][mid]:.4g} | {share:.0%} |"
            )
            if batched:
                row += f" {res['batched_uniform'] * n:.4g} | {res['batched_iv'] * n:.4g} |"
            lines.append(row)
        lines.append("")
        for key, label in (("identity", "Thm 1 identity"), ("mse", "measured")):
            r = ratios(entry, key)
            lines.append(
                f"- {label}: best bandit {r['best_bandit']}; MSE ratio best bandit / best fixed arm = "
                f"{r.get('vs_best_arm', float('nan')):.3f} (goal ≤ 1.25); best bandit / PMC = "
                f"{r.get('vs_pmc', float('nan')):.3f} (goal < 1)."
            )
        if any(p in pols for p in OTHER_RANGES):
            r = ratios(entry, "identity", BANDITS + OTHER_RANGES)
            lines.append(
                f"- Thm 1 identity, best over both range choices: {r['best_bandit']}; / best fixed arm = "
                f"{r.get('vs_best_arm', float('nan')):.3f}; / PMC = {r.get('vs_pmc', float('nan')):.3f}."
            )
        lines.append("")
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small scale (minutes)")
    parser.add_argument("--reps", type=int, default=None)
    parser.add_argument(
        "--batched",
        type=int,
        default=0,
        metavar="R",
        help="also R repetitions through pmcbandit.run with 100 paths per pull",
    )
    parser.add_argument("--reference-paths", type=int, default=None)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    settings = (
        quick_settings()
        if args.quick
        else dict(reps=30, max_samples=100_000, pilot_paths=200_000, reference_paths=10_000_000, pmc_population=1000)
    )
    if args.reps:
        settings["reps"] = args.reps
    if args.reference_paths:
        settings["reference_paths"] = args.reference_paths
    settings["batched_reps"] = args.batched
    results = fig2(jobs=args.jobs, **settings)
    command = "python -m benchmarks.fig2_cir" + " ".join(
        [""]
        + (["--quick"] if args.quick else [])
        + ([f"--reps {args.reps}"] if args.reps else [])
        + ([f"--batched {args.batched}"] if args.batched else [])
        + ([f"--reference-paths {args.reference_paths}"] if args.reference_paths else [])
    )
    text = markdown(results, command, settings)
    sys.stdout.write(text)
    if not args.no_write:
        RESULTS.mkdir(exist_ok=True)
        stem = "fig2_cir" + ("_quick" if args.quick else "")
        (RESULTS / f"{stem}.md").write_text(text)
        plot(results, RESULTS / f"{stem}.png")
    return results


def quick_settings():
    """The quick scale (the notebook's PMCBANDIT_QUICK=1 and CI)."""
    return dict(reps=2, max_samples=3_000, pilot_paths=20_000, reference_paths=100_000, pmc_population=300)


if __name__ == "__main__":
    main()

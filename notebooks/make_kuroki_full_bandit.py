"""Write notebooks/kuroki_full_bandit.ipynb (stored without outputs; CI runs it with PMCBANDIT_QUICK=1).

Run as ``.venv/bin/python notebooks/make_kuroki_full_bandit.py``.
"""

from pathlib import Path

import nbformat

CELLS = [
    ("md", r"""# Full-bandit multiple-arm identification: Kuroki et al. (2020), Sec. 5

*Polynomial-time algorithms for multiple-arm identification with full-bandit feedback* (Neural Computation
2020): $n$ single arms, super-arms of $k$ arms, and only the noisy **sum** of a pulled super-arm's rewards is
observed. The algorithms keep the least-squares estimate $\hat\theta_t = A_t^{-1}b_t$ and stop on
confidence-ellipsoid bounds: SAQM (Alg. 2, CEM through the densest-$k$-subgraph reduction), SA-FOA (Alg. 3,
first-order approximation of the gap), ICB (Alg. 4, diagonal bounds) and Exhaustive (enumeration).
Pulls follow a static allocation: uniform on a full-rank support, or the G-allocation (App. D).

This notebook reproduces the paper's experiments at quick scale; the full-scale numbers are in
`benchmarks/results/bench_full_bandit_*.md` (`python -m benchmarks.bench_full_bandit`). Instance values the
extraction lost are chosen in `pmcbandit.full_bandit.instances` (module docstring)."""),
    ("code", r"""import os
import time
import warnings

import matplotlib.pyplot as plt
import numpy as np

import pmcbandit  # noqa: F401  (configures PyTensor before anything else imports it)
from pmcbandit import Pulls
from pmcbandit.exceptions import SettingsWarning
from pmcbandit.full_bandit import FullBanditEnvironment, identify_full_bandit, simulate_full_bandit, uniform_allocation
from pmcbandit.full_bandit.g_allocation import g_allocation, g_value
from pmcbandit.full_bandit.instances import CROWDSOURCING, SYNTHETIC, crowdsourcing_instance, synthetic_instance

QUICK = os.environ.get("PMCBANDIT_QUICK") == "1"
HORIZON = 5_000 if QUICK else 100_000
TRIALS = 2 if QUICK else 10
print(f"{'quick' if QUICK else 'notebook'} scale: horizon {HORIZON:,}, {TRIALS} runs per cell")"""),
    ("md", r"""## One live run

`identify_full_bandit` with SA-FOA on a small synthetic instance ($n = 10$, $k = 5$, gap 0.4), Gaussian noise of
sd 0.1 on the sum, G-allocation. It runs through the package's one run loop (budget, progress bar, faults,
checkpoints, executors as for every other door); `simulate_full_bandit` takes the same arguments and replays it
pull for pull in a numba loop, which the experiments below use."""),
    ("code", r"""inst = synthetic_instance(10, 5, SYNTHETIC["large_gap"], np.random.default_rng(0))
env = FullBanditEnvironment(inst.theta, noise_sd=0.1, noise="sum")
res = identify_full_bandit(env, "sa_foa", k=5, delta=0.05, allocation="g", random_seed=1, progressbar=False)
sim = simulate_full_bandit(env, "sa_foa", k=5, delta=0.05, allocation="g", random_seed=1)
print(res.summary())
print("simulator: same stopping round:", sim.stop_round == res.samples, "- same answer:",
      sim.recommended.tolist() == res.selected_indices.tolist())
print("true best:", sorted(np.argsort(-inst.theta)[:5].tolist()))"""),
    ("md", r"""## G-allocation (App. D)

By Kiefer–Wolfowitz the G-optimal value $\min_\lambda\max_M \chi_M^\top A(\lambda)^{-1}\chi_M$ over all size-$k$
sets is exactly $n$. The uniform allocation on a small full-rank support is far from it, which widens every
confidence ellipsoid."""),
    ("code", r"""for n, k in [(10, 5), (20, 5), (36, 10)]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SettingsWarning)
        ga = g_allocation(n, k, max_iter=300)
    print(f"n={n:3d} k={k:2d}: G-value uniform {g_value(uniform_allocation(n, k))[1]:10.1f}, "
          f"G-allocation <= {g_value(ga)[1]:7.2f} (optimum n = {n}), support {ga.support.shape[0]} rows")"""),
    ("md", r"""## Fig. 1: approximation quality against Exhaustive

$n = 10$, $k = 5$, noise N(0, 1) on the sum, small gap 0.1 and large gap 0.4. Ratio of SAQM's CEM value (Alg. 1)
to the exact maximum, and of SA-FOA's $Z_t$ to Exhaustive's $Z^*_t$ of eq. (5), every few hundred rounds."""),
    ("code", r"""fig, axes = plt.subplots(1, 2, figsize=(10, 3.5), sharey=True)
for ax, alloc_name in zip(axes, ["g", "uniform"]):
    for label, gap in [("small", SYNTHETIC["small_gap"]), ("large", SYNTHETIC["large_gap"])]:
        th = synthetic_instance(10, 5, gap, np.random.default_rng(0)).theta
        r = simulate_full_bandit(th, "saqm", k=5, sigma=1.0, noise="sum", allocation=alloc_name,
                                 budget=Pulls(HORIZON), random_seed=1, record_every=HORIZON // 50).records
        ax.plot(r["round"], r["saqm_approx"] / r["cem_exact"], label=f"SAQM, {label} gap")
        ok = r["gap_exact"] > 0
        ax.plot(r["round"][ok], r["safoa_approx"][ok] / r["gap_exact"][ok], "--", label=f"SA-FOA, {label} gap")
    ax.set_title(f"{alloc_name} allocation")
    ax.set_xlabel("round")
axes[0].set_ylabel("approximation ratio")
axes[1].legend(fontsize=8)
plt.tight_layout()"""),
    ("md", r"""## Fig. 3: time per round against $n$

Wall time per round of the numba simulator (compile excluded), $k = 5$: Exhaustive grows with $\binom nk$,
the others polynomially."""),
    ("code", r"""def per_round(alg, n, k=5, rounds=300):
    th = synthetic_instance(n, k, 0.1, np.random.default_rng(n)).theta
    simulate_full_bandit(th, alg, k=k, sigma=1.0, noise="sum", budget=Pulls(2 * n + 5), random_seed=0)
    t0 = time.perf_counter()
    r = simulate_full_bandit(th, alg, k=k, sigma=1.0, noise="sum", budget=Pulls(rounds), random_seed=0)
    return (time.perf_counter() - t0) / r.rounds


ns = [8, 10, 12, 15] if QUICK else [8, 10, 12, 15, 18, 20, 22]
times = {alg: [per_round(alg, n) * 1e6 for n in ns] for alg in ["icb", "saqm", "sa_foa", "exhaustive"]}
for alg, t in times.items():
    plt.semilogy(ns, t, "o-", label=alg)
plt.xlabel("n")
plt.ylabel("µs per round")
plt.legend()
plt.title("k = 5");"""),
    ("md", r"""## Table 2: crowdsourcing-sized instances

Synthetic stand-ins for the paper's datasets (workers, average and best accuracy of Table 2, $k = 10$), noise
N(0, 0.1²) on the sum, $\delta = 0.05$, $\epsilon = 0$, G-allocation here (the full benchmark also runs the uniform
allocation). Pulls to stop and the ratios SA-FOA / ICB and SA-FOA / SAQM; the paper reports 0.04–0.15 and
0.03–0.07."""),
    ("code", r"""names = ["IT"] if QUICK else list(CROWDSOURCING)
cap = 200_000 if QUICK else 3_000_000
for name in names:
    inst = crowdsourcing_instance(name)
    n = inst.theta.shape[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SettingsWarning)
        ga = g_allocation(n, 10, max_iter=300)
    stops, right = {}, True
    for alg in ["icb", "saqm", "sa_foa"]:
        runs = [simulate_full_bandit(inst.theta, alg, k=10, sigma=0.1, noise="sum", allocation=ga, budget=Pulls(cap),
                                     random_seed=s) for s in range(TRIALS)]
        stops[alg] = np.mean([r.rounds for r in runs])
        right &= all(r.correct for r in runs)
    print(f"{name:9s} n={n:3d}: ICB {stops['icb']:9,.0f}  SAQM {stops['saqm']:9,.0f}  SA-FOA {stops['sa_foa']:8,.0f}  "
          f"SA-FOA/ICB {stops['sa_foa'] / stops['icb']:.2f}  SA-FOA/SAQM {stops['sa_foa'] / stops['saqm']:.3f}  "
          f"all optimal: {right}")"""),
]


def main() -> Path:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    nb.cells = [nbformat.v4.new_markdown_cell(src) if kind == "md" else nbformat.v4.new_code_cell(src)
                for kind, src in CELLS]
    out = Path(__file__).resolve().parent / "kuroki_full_bandit.ipynb"
    nbformat.write(nb, out)
    return out


if __name__ == "__main__":
    print(main())

"""The combiners on right-skewed weights: how far the estimate leans low, and how much the weighting adds.

Run: ``.venv/bin/python -m benchmarks.bench_combine_skew [--seeds 1000]``. Writes
``benchmarks/results/bench_combine_skew.md``.

Importance weights with a heavy right tail make each arm's mean read low more often than high (the rare large
weights are missing from most samples), and the same samples' variance reads low with it. An inverse-variance
combination (:func:`pmcbandit.stats.combine.combine`, ``"inverse_variance"``, as the evidence doors use) then gives
more weight to the arm whose sample happened to miss its large weights, so it can lean further low than the plain
average (``"uniform"``); the cross-fitted combination (``"cross_fitted"``) weights each half of an arm's pulls by
the variance of its other half. This measures the three on exact inputs: ``K`` unbiased arms of weights with
:math:`E[w] = 1`, log-normal of log-variance :math:`s^2` (Var :math:`w = e^{s^2} - 1`) or Pareto-tailed (Lomax, tail
shape :math:`k`: finite variance for :math:`k < 1/2`, as a Pareto :math:`\\hat k` reads it; a pair of spreads gives
the arms different ones), each pulled ``T`` times in batches of
``B`` weights (a pull's mean and within-batch variance enter the combiner, as an importance arm's pulls do). Per
setting and combiner: the mean of :math:`z = (\\hat\\mu - 1)/\\widehat{SE}`, its standard deviation, and the share of
95 % intervals (:math:`\\hat\\mu \\pm 1.96\\,\\widehat{SE}`) that contain 1, and the root-mean-square error of
:math:`\\hat\\mu`. Seeds are fixed; each seed draws the same weights for every combiner. The tail rule of the
evidence runs (``var_scale``, :mod:`pmcbandit.stats.pareto_tail`) is not applied here: the rows are the combiners
alone.
"""

from __future__ import annotations

import argparse

import numpy as np

from benchmarks._common import machine, utc_now, write_section

#: (weights, arms K, their spread: log-variance s^2 or Pareto shape k, pulls per arm T, batch size B)
SETTINGS = (("log-normal", 1, 2.0, 50, 1000), ("log-normal", 2, 2.0, 50, 1000), ("log-normal", 3, 2.0, 50, 1000),
            ("log-normal", 2, 3.0, 50, 1000), ("log-normal", 2, 3.0, 200, 1000), ("Pareto", 2, 0.3, 50, 1000),
            ("Pareto", 2, 0.4, 50, 1000), ("Pareto", 2, 0.45, 50, 1000), ("log-normal", 2, (1.0, 3.0), 50, 1000),
            ("Pareto", 2, (0.2, 0.45), 50, 1000))
METHODS = ("uniform", "inverse_variance", "cross_fitted")


def weights(rng, family: str, spread: float, shape: tuple) -> np.ndarray:
    r"""Weights of mean 1: log-normal of log-variance ``spread``, or Lomax (generalized Pareto from 0) of shape
    ``spread``, :math:`w \propto U^{-k} - 1`; a tuple ``spread`` gives each arm (first axis) its own."""
    if isinstance(spread, tuple):
        return np.stack([weights(rng, family, s, shape[1:]) for s in spread])
    if family == "log-normal":
        return np.exp(rng.normal(-spread / 2.0, np.sqrt(spread), shape))
    return (rng.uniform(size=shape) ** -spread - 1.0) * (1.0 - spread) / spread


def one_run(seed: int, family: str, n_arms: int, spread: float, pulls: int, batch: int) -> dict[str, float]:
    """Error (estimate - 1) and standard error of each combiner on one seed's weights."""
    from pmcbandit.stats.combine import combine

    rng = np.random.default_rng([seed, 20171104])
    w = weights(rng, family, spread, (n_arms, pulls, batch))
    values = w.mean(axis=2).ravel()
    within = (w.var(axis=2, ddof=1) / batch).ravel()
    arms = np.repeat(np.arange(n_arms), pulls)
    size = np.full(values.size, batch)
    out = {}
    for method in METHODS:
        c = combine(values, arms, n_arms, method, within, size)
        out[method] = (c.estimate - 1.0, c.se)
    return out


def measure(seeds: int) -> list[str]:
    rows = ["| weights | arms K | s² or k | pulls T | batch B | combiner | mean z | sd z | covered | RMS error |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for family, n_arms, spread, pulls, batch in SETTINGS:
        err = {m: np.empty(seeds) for m in METHODS}
        se = {m: np.empty(seeds) for m in METHODS}
        for seed in range(seeds):
            for m, (e, s) in one_run(seed, family, n_arms, spread, pulls, batch).items():
                err[m][seed], se[m][seed] = e, s
        label = ", ".join(f"{s:g}" for s in spread) if isinstance(spread, tuple) else f"{spread:g}"
        for m in METHODS:
            z = err[m] / se[m]
            rows.append(f"| {family} | {n_arms} | {label} | {pulls} | {batch} | {m} | {z.mean():+.3f} "
                        f"| {z.std(ddof=1):.2f} | {np.mean(np.abs(z) < 1.96):.3f} | {np.sqrt(np.mean(err[m]**2)):.2e} |")
    return rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=1000, help="seeds per setting")
    args = parser.parse_args(argv)
    started = utc_now()
    rows = measure(args.seeds)
    print("\n".join(rows), flush=True)
    markdown = f"""## The combiners on right-skewed weights

- machine: {machine()}
- date: {started}
- command: `.venv/bin/python -m benchmarks.bench_combine_skew --seeds {args.seeds}`
- {args.seeds} seeds per setting; weights with E[w] = 1 (module docstring); z = (estimate - 1) / se; covered:
  |z| < 1.96

""" + "\n".join(rows)
    print(write_section("bench_combine_skew", markdown))


if __name__ == "__main__":
    main()

"""Reference log evidences of the calibration suite (:mod:`models.evidence_suite`).

Two jobs:

* ``--write-data`` (run once; its output is committed): draws the synthetic data sets of
  the suite from fixed seeds and writes them to ``models/data/evidence_suite_*.csv``, so a
  change of NumPy's random streams cannot move the models or their references.
* the default run: the long importance-sampling references of the two logistic
  regressions (``logistic_regression_d50`` and ``pima_768``) from two independent seeds
  each, the convergence checks of the quadrature references of
  ``eight_schools_centred``, ``mixture_label_switching``, ``student_t_unknown_nu``,
  ``hierarchical_normal_100`` and ``hierarchical_logistic_50``, and a long
  ``estimate_evidence`` run on each of the two hierarchies beside its quadrature
  (``--pool-seconds``); it prints a markdown section and writes it to
  ``benchmarks/results/reference_evidence.md``. ``--quadrature-only`` skips the
  importance-sampling runs and writes ``benchmarks/results/reference_evidence_quadrature.md``.

The importance sampler (:mod:`models.reference_is`) is written from the model's compiled density alone
(:meth:`ModelDensity.laplace` and :meth:`ModelDensity.compile_logp_batch`), not from the
evidence arms that the references will judge: multivariate Student-t proposals
:math:`q = t_\\nu(m, cS)`, :math:`\\nu = 20`, :math:`c = 1.1`, either at the Laplace fit
(:math:`m` the mode, :math:`S` the inverse negative Hessian; Kass & Raftery 1995,
Sec. 4.1) or moment-matched (:math:`m, S` the posterior mean and covariance estimated by a
Laplace-t pilot run; Oh & Berger 1992), weights :math:`w_i = \\tilde p(x_i)/q(x_i)`
(Robert & Casella 2004, Sec. 3.3), sums :math:`S_1=\\sum w_i` and :math:`S_2=\\sum w_i^2`
accumulated in log space,

.. math::

    \\log\\hat Z = \\log(S_1/N), \\qquad
    \\widehat{\\mathrm{se}} = \\sqrt{\\hat\\rho / N}, \\quad
    \\hat\\rho = N S_2 / S_1^2 - 1

(the delta-method SE of :math:`\\log\\hat Z`; :math:`\\hat\\rho` is the relative variance of
one weight). Each reference pools two runs of one proposal (seeds 20141 and 20142) by
summing their :math:`S_1, S_2, N`. ``logistic_regression_d50``: the reference is the
moment-matched proposal (relative variance ~0.7 per draw against ~6 for the Laplace t in
50 dimensions, whose two runs are reported as the check); ``pima_768``: the Laplace t
(relative variance 0.107, the floor of a df-20 t on a near-Gaussian posterior).

Run: ``.venv/bin/python -m benchmarks.reference_evidence [--draws N] [--check-draws N]
[--pima-draws N]`` (defaults ``1.5e7``, ``1e7`` and ``1e7`` weights per run, about 20 CPU
minutes in all on the 2-core machine of the results); ``--write-data`` only rewrites the
data sets.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pmcbandit  # noqa: F401  (configures PyTensor's BLAS before pymc is imported)
from benchmarks import _common
from models.reference_is import BATCH, DF, INFLATION, importance_run, laplace_t, moment_matched, pool

DATA_DIR = Path(__file__).resolve().parent.parent / "models" / "data"
#: Root seed of the data sets: ``numpy.random.default_rng([DATA_SEED, k])``, k = 1..4.
DATA_SEED = 20141010
#: Seeds of the two independent runs of each long reference, and of the pilot run.
SEEDS, PILOT_SEED = (20141, 20142), 20140


def write_data(directory: Path = DATA_DIR) -> list[Path]:
    """Draw and write the suite's synthetic data sets (values rounded to 6 decimals).

    * ``evidence_suite_conjugate.csv``: 30 rows ``x1,x2,x3,y``; ``x ~ N(0, I_3)``,
      ``beta ~ N(0, I_3)``, ``y = x beta + N(0, 0.5^2)``; stream ``[DATA_SEED, 1]``.
    * ``evidence_suite_mixture.csv``: 20 draws of ``N(-2, 1)`` then 20 of ``N(2, 1)``;
      stream ``[DATA_SEED, 2]``.
    * ``evidence_suite_student_t.csv``: 40 draws of a standard Student-t with 4 degrees of
      freedom; stream ``[DATA_SEED, 3]``.
    * ``evidence_suite_logistic_d50.csv``: 400 rows ``x1..x49,y``; ``x ~ N(0, I_49)``,
      true coefficients (intercept first) ``N(0, 0.2^2)``, ``y ~ Bernoulli(sigmoid(b0 + x b))``;
      stream ``[DATA_SEED, 4]``.
    * ``evidence_suite_hier_normal.csv``: 100 rows ``y,s``; ``s ~ U(0.5, 2.5)``,
      ``theta ~ N(1, 0.6^2)``, ``y ~ N(theta, s^2)``; stream ``[DATA_SEED, 5]``.
    * ``evidence_suite_hier_logistic.csv``: 500 rows ``group,x,y``, ten rows for each of 50
      groups; ``x ~ Bernoulli(1/2)``, group intercepts ``N(-0.3, 0.8^2)``, slope 0.7,
      ``y ~ Bernoulli(sigmoid(a_group + 0.7 x))``; stream ``[DATA_SEED, 6]``.
    """
    directory.mkdir(parents=True, exist_ok=True)
    rngs = {k: np.random.default_rng([DATA_SEED, k]) for k in (1, 2, 3, 4, 5, 6)}
    paths = []

    def save(name, header, table, fmt):
        path = directory / name
        np.savetxt(path, table, delimiter=",", header=header, comments="", fmt=fmt)
        paths.append(path)

    g = rngs[1]
    X = np.round(g.normal(size=(30, 3)), 6)
    y = np.round(X @ g.normal(size=3) + g.normal(0.0, 0.5, size=30), 6)
    save("evidence_suite_conjugate.csv", "x1,x2,x3,y", np.column_stack([X, y]), "%.6f")
    g = rngs[2]
    y = np.round(np.concatenate([g.normal(-2.0, 1.0, 20), g.normal(2.0, 1.0, 20)]), 6)
    save("evidence_suite_mixture.csv", "y", y[:, None], "%.6f")
    g = rngs[3]
    save("evidence_suite_student_t.csv", "y", np.round(g.standard_t(4.0, 40), 6)[:, None], "%.6f")
    g = rngs[4]
    X = np.round(g.normal(size=(400, 49)), 6)
    coef = g.normal(0.0, 0.2, size=50)
    eta = coef[0] + X @ coef[1:]
    y = (g.uniform(size=400) < 1.0 / (1.0 + np.exp(-eta))).astype(float)
    header = ",".join([f"x{j}" for j in range(1, 50)] + ["y"])
    save("evidence_suite_logistic_d50.csv", header, np.column_stack([X, y]), ["%.6f"] * 49 + ["%d"])
    g = rngs[5]
    s = np.round(g.uniform(0.5, 2.5, size=100), 6)
    y = np.round(g.normal(1.0, 0.6, size=100) + s * g.normal(size=100), 6)
    save("evidence_suite_hier_normal.csv", "y,s", np.column_stack([y, s]), "%.6f")
    g = rngs[6]
    group = np.repeat(np.arange(50), 10)
    x = (g.uniform(size=500) < 0.5).astype(float)
    a = g.normal(-0.3, 0.8, size=50)
    y = (g.uniform(size=500) < 1.0 / (1.0 + np.exp(-(a[group] + 0.7 * x)))).astype(float)
    save("evidence_suite_hier_logistic.csv", "group,x,y", np.column_stack([group, x, y]), "%d")
    return paths


def quadrature_checks() -> list[tuple[str, str, float, str, float]]:
    """``(model, method, log Z, check, log Z of the check)`` rows for the quadrature references."""
    from models import evidence_suite as es

    rows = []
    ref, err = es.eight_schools_log_z("quad")
    rows.append(("eight_schools_centred", f"QUADPACK on tau in (0, inf), est. rel. error {err:.1e}", ref,
                 "Gauss-Legendre in s = CDF(tau), 8 panels x 64", es.eight_schools_log_z("gauss-legendre", 64, 8)[0]))
    rows.append(("eight_schools_centred", "", ref,
                 "Gauss-Legendre in s, 16 panels x 128", es.eight_schools_log_z("gauss-legendre", 128, 16)[0]))
    ref = es.mixture_log_z(16, 32)
    rows.append(("mixture_label_switching", "GL 32 panels x 16 nodes per axis on [-8, 8]^2", ref,
                 "48 panels x 12 on [-10, 10]^2", es.mixture_log_z(12, 48, 10.0)))
    rows.append(("mixture_label_switching", "", ref, "80 panels x 20 on [-12, 12]^2", es.mixture_log_z(20, 80, 12.0)))
    lows, highs, face = es.student_t_box()
    wide = es.student_t_box(width=14.0, drop=60.0)
    ref = es.student_t_log_z(96, box=(lows, highs))
    box = ", ".join(f"[{lo:.2f}, {hi:.2f}]" for lo, hi in zip(lows, highs))
    rows.append(("student_t_unknown_nu", f"GL 96^3 on box {box} (faces {face:.1f} nats below peak)", ref,
                 "GL 128^3, same box", es.student_t_log_z(128, box=(lows, highs))))
    rows.append(("student_t_unknown_nu", "", ref, "GL 3 panels x 48 per axis, same box",
                 es.student_t_log_z(48, panels=3, box=(lows, highs))))
    rows.append(("student_t_unknown_nu", "", ref, f"GL 128^3 on a box with faces {wide[2]:.1f} nats below peak",
                 es.student_t_log_z(128, box=wide[:2])))
    rows += hierarchy_checks()
    return rows


def hierarchy_checks() -> list[tuple[str, str, float, str, float]]:
    """Rows of :func:`quadrature_checks` for ``hierarchical_normal_100`` and ``hierarchical_logistic_50``."""
    from models import evidence_suite as es

    rows = []
    ref, err = es.hier_normal_log_z("quad")
    for nodes, panels in ((64, 16), (128, 32)):
        rows.append(("hierarchical_normal_100" if nodes == 64 else "",
                     f"QUADPACK on log tau in (-inf, inf), est. rel. error {err:.1e}" if nodes == 64 else "", ref,
                     f"Gauss-Legendre in s = CDF(tau), {panels} panels x {nodes}",
                     es.hier_normal_log_z("gauss-legendre", nodes, panels)[0]))
    lows, highs, face = es.hier_logistic_box()
    wide = es.hier_logistic_box(width=14.0, drop=60.0)
    ref = es.hier_logistic_log_z(32, panels=2, box=(lows, highs))
    box = ", ".join(f"[{lo:.2f}, {hi:.2f}]" for lo, hi in zip(lows, highs))
    name = "hierarchical_logistic_50"
    rows.append((name, f"GL 2 panels x 32 per axis on (mu_a, sigma_a, beta) in {box} (faces {face:.1f} nats "
                 "below peak), 20 Hermite nodes per group", ref, "GL 48^3, same box", es.hier_logistic_log_z(48, box=(lows, highs))))
    rows.append(("", "", ref, "GL 3 panels x 24, same box", es.hier_logistic_log_z(24, panels=3, box=(lows, highs))))
    rows.append(("", "", ref, "GL 48^3, 32 Hermite nodes per group",
                 es.hier_logistic_log_z(48, hermite=32, box=(lows, highs))))
    rows.append(("", "", ref, f"GL 2 panels x 32 on a box with faces {wide[2]:.1f} nats below peak",
                 es.hier_logistic_log_z(32, panels=2, box=wide[:2])))
    return rows


def pool_check(name: str, seconds: float, seed: int) -> tuple[float, float, str, float]:
    """``(log Z, SE, interval status, wall seconds)`` of ``estimate_evidence`` on suite model ``name``: a long run of
    the estimator the suite judges, reported beside a quadrature reference as a second route to it."""
    import warnings

    from models import evidence_suite as es
    from pmcbandit.evidence.estimate import estimate_evidence
    from pmcbandit.exceptions import PmcBanditWarning

    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PmcBanditWarning)
        result = estimate_evidence(es.SUITE[name]().model, budget=seconds, random_seed=seed, progressbar=False)
    return result.log_z, result.log_z_se, result.interval_status, time.perf_counter() - start


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write-data", action="store_true", help="(re)write the suite's data files and exit")
    parser.add_argument("--draws", type=int, default=15_000_000,
                        help="weights per run, logistic_regression_d50, moment-matched t (the reference; two runs)")
    parser.add_argument("--check-draws", type=int, default=10_000_000,
                        help="weights per run, logistic_regression_d50, Laplace t (the check; two runs)")
    parser.add_argument("--pilot-draws", type=int, default=400_000, help="pilot draws of the moment matching")
    parser.add_argument("--pima-draws", type=int, default=10_000_000, help="weights per run for pima_768 (two runs)")
    parser.add_argument("--quadrature-only", action="store_true",
                        help="closed forms, quadratures and the pool checks only (no importance-sampling runs)")
    parser.add_argument("--pool-seconds", type=float, default=300.0,
                        help="wall seconds of the estimate_evidence run beside each hierarchy's quadrature (0: none)")
    args = parser.parse_args(argv)
    if args.write_data:
        for path in write_data():
            print(path)
        return 0
    import pymc
    import pytensor

    wall0, cpu0 = time.perf_counter(), time.process_time()
    from models import evidence_suite as es
    from models import pima

    command = ".venv/bin/python -m benchmarks.reference_evidence" + "".join(f" {a}" for a in (argv or sys.argv[1:]))
    lines = [
        "## Reference log evidence of the calibration suite (`models.evidence_suite`)",
        "",
        f"- machine: {_common.machine()}; Python {sys.version.split()[0]}, numpy {np.__version__}, "
        f"PyMC {pymc.__version__}, PyTensor {pytensor.__version__}",
        f"- date: {_common.utc_now()}",
        f"- command: `{command}`",
        "",
        "### Closed forms",
        "",
        f"- conjugate: log Z = {es.conjugate_log_z():.10f} (log N(y; 0, sigma^2 I + tau^2 X X^T))",
        f"- beta_binomial: log Z = {es.beta_binomial_log_z():.10f} (product of Beta-binomial marginals)",
        "",
        "### Quadrature references and their checks",
        "",
        "| model | reference method | log Z | check | check log Z | abs. difference |",
        "|---|---|---|---|---|---|",
    ]
    start = time.process_time()
    for model, method, ref, check, value in quadrature_checks():
        lines.append(f"| {model} | {method} | {ref:.13f} | {check} | {value:.13f} | {abs(value - ref):.1e} |")
    lines += ["", f"Quadratures and checks: {time.process_time() - start:.1f} CPU seconds.", ""]
    if args.pool_seconds > 0:
        lines += [f"### `estimate_evidence` ({args.pool_seconds:g} s of wall time, seed {PILOT_SEED}) beside the "
                  "hierarchies' quadratures", "",
                  "| model | quadrature log Z | pool log Z | pool SE | z | interval status | wall seconds |",
                  "|---|---|---|---|---|---|---|"]
        for name in ("hierarchical_normal_100", "hierarchical_logistic_50"):
            ref = es.SUITE[name]().log_z
            log_z, se, status, wall = pool_check(name, args.pool_seconds, PILOT_SEED)
            lines.append(f"| {name} | {ref:.8f} | {log_z:.5f} | {se:.1e} | {(log_z - ref) / se:+.2f} | {status} "
                         f"| {wall:.0f} |")
        lines.append("")
    if args.quadrature_only:
        lines += [f"Whole script: {time.process_time() - cpu0:.0f} CPU seconds, {time.perf_counter() - wall0:.0f} "
                  "wall seconds (importance-sampling references not rerun: `--quadrature-only`)."]
        md = "\n".join(lines)
        print(md)
        _common.write_section("reference_evidence_quadrature", md)
        return 0
    lines += [
        f"### Long importance-sampling references (Student-t proposals, df {DF:g}, covariance x {INFLATION:g}, "
        f"batches of {BATCH})",
        "",
        "Seeds: `numpy.random.default_rng(seed)`; relvar per draw = N S2 / S1^2 - 1; Pareto k of the "
        "first 10^6 log weights (`arviz.psislw`). Proposals: `laplace` = t at the Laplace fit; "
        f"`moment-matched` = t with the posterior mean and covariance estimated by a pilot of "
        f"{args.pilot_draws:.0e} Laplace-t draws (seed {PILOT_SEED}, then discarded).",
        "",
        "| model | proposal | seed | draws | log Z | SE | relvar per draw | Pareto k | CPU seconds |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    notes = []

    def report(name, kind, proposal, draws):
        runs = [importance_run(proposal, seed, draws) for seed in SEEDS]
        pooled = pool(runs)
        for r in runs:
            lines.append(f"| {name} | {kind} | {r.seed} | {r.draws:.1e} | {r.log_z:.6f} | {r.se:.1e} "
                         f"| {r.rel_var:.4f} | {r.khat:.2f} | {r.cpu_seconds:.0f} |")
        lines.append(f"| {name} | {kind} | pooled | {pooled.draws:.1e} | {pooled.log_z:.6f} | {pooled.se:.1e} "
                     f"| {pooled.rel_var:.4f} | | {pooled.cpu_seconds:.0f} |")
        diff = runs[0].log_z - runs[1].log_z
        notes.append(f"- {name}, {kind}: the two seeds differ by {abs(diff):.1e} "
                     f"(z = {diff / np.hypot(runs[0].se, runs[1].se):.2f} on their combined SE); "
                     f"pooled {pooled.log_z:.6f} +- {pooled.se:.1e}.")
        return pooled

    pilot = laplace_t(es.logistic_d50_model())
    check = report("logistic_regression_d50", "laplace", pilot, args.check_draws)
    start = time.process_time()
    proposal, ess = moment_matched(pilot, PILOT_SEED, args.pilot_draws)
    notes.append(f"- logistic_regression_d50: pilot ESS {ess:.0f} of {args.pilot_draws:.0e} "
                 f"({time.process_time() - start:.0f} CPU seconds).")
    ref = report("logistic_regression_d50", "moment-matched", proposal, args.draws)
    diff = ref.log_z - check.log_z
    notes.append(f"- logistic_regression_d50: moment-matched - laplace = {diff:.1e} "
                 f"(z = {diff / np.hypot(ref.se, check.se):.2f}); stored: the moment-matched pooled value.")
    ref = report("pima_768", "laplace", laplace_t(pima.logistic_regression(*pima.load_data(768))), args.pima_draws)
    notes.append("- pima_768: stored: the pooled value.")
    lines += ["", *notes, "",
              f"Whole script: {time.process_time() - cpu0:.0f} CPU seconds, {time.perf_counter() - wall0:.0f} wall "
              "seconds (compilation included; other processes shared the machine's cores)."]
    md = "\n".join(lines)
    print(md)
    _common.write_section("reference_evidence", md)
    return 0


if __name__ == "__main__":
    sys.exit(main())

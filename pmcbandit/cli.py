"""Command line: ``pmcbandit evidence`` and ``pmcbandit price``.

Both run a pool of arms under a bandit policy, print the combined estimate with its standard
error and the per-arm table, and write the run's InferenceData (netCDF) and plots to ``--out``.
"""

from __future__ import annotations

import argparse
import os
import runpy
import sys
from pathlib import Path

from pmcbandit.stats.combine import COMBINE_METHODS
from pmcbandit.policies import POLICY_NAMES
from pmcbandit.policies.rewards import RANGE_NAMES

__all__ = ["main"]


def _common(parser: argparse.ArgumentParser, budget: float) -> None:
    parser.add_argument("--budget", type=float, default=budget, help=f"seconds of wall time (default {budget})")
    parser.add_argument("--policy", choices=[p for p in POLICY_NAMES if p != "oracle"], default="thompson")
    parser.add_argument("--combine", choices=COMBINE_METHODS, default="inverse_variance")
    parser.add_argument("--ranges", choices=RANGE_NAMES, default="auto",
                        help="loss ranges (App. B): per arm, shared, or the policy's default (auto)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--out", type=Path, default=None, help="output folder for InferenceData and plots")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pmcbandit", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    ev = sub.add_parser(
        "evidence",
        help="log marginal likelihood of a PyMC model (default: Bayesian logistic regression on Pima, T=50)",
    )
    ev.add_argument("--T", type=int, default=50, help="Pima rows used (1..768, default 50)")
    ev.add_argument(
        "--model-file", type=Path, default=None,
        help="a Python file defining a PyMC model named `model` (the file is executed to load it)",
    )
    ev.add_argument("--smc", action="store_true", help="add PyMC's SMC (biased-consistent) to the pool")
    _common(ev, budget=20.0)

    pr = sub.add_parser("price", help="CIR caplet price with 16 importance-sampling drifts (Neufeld et al. 6.2)")
    pr.add_argument("--strike", type=float, default=0.08, help="strike K (default 0.08)")
    pr.add_argument("--paths-per-pull", type=int, default=1000)
    _common(pr, budget=10.0)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    import warnings

    from pmcbandit.exceptions import PmcBanditWarning

    warnings.simplefilter("default", PmcBanditWarning)
    if args.command == "evidence":
        result, title = _evidence(args)
    else:
        result, title = _price(args)
    print(title)
    print(result.summary())
    out = args.out or Path(f"pmcbandit-{args.command}")
    written = write_outputs(result, out)
    print(f"wrote {', '.join(str(p) for p in written)}")
    return 0


def _evidence(args):
    from pmcbandit.evidence import estimate_evidence

    if args.model_file is not None:
        namespace = runpy.run_path(os.fspath(args.model_file))
        if "model" not in namespace:
            raise SystemExit(f"error: {args.model_file} defines no variable named `model`")
        model, title = namespace["model"], f"model from {args.model_file}"
    else:
        from models import pima

        if not 1 <= args.T <= 768:
            raise SystemExit(f"error: --T must be in [1, 768], got {args.T}")
        model = pima.logistic_regression(*pima.load_data(args.T))
        title = f"Bayesian logistic regression on Pima, T={args.T}"
    from pmcbandit.evidence import evidence_arms

    # The default pool is sized for the budget inside estimate_evidence; with SMC it is built here.
    arms = evidence_arms(model, smc=True, budget_seconds=args.budget) if args.smc else None
    result = estimate_evidence(
        model, arms=arms, policy=args.policy, budget=args.budget, combine=args.combine,
        random_seed=args.seed, progressbar=not args.no_progress, ranges=args.ranges,
    )
    return result, f"{title}: {len(result.arm_names)} arms, {args.policy}, {args.budget:g} s"


def _price(args):
    from models.cir import caplet_arms

    import pmcbandit

    arms = caplet_arms(strike=args.strike, paths_per_pull=args.paths_per_pull)
    result = pmcbandit.run(
        arms, policy=args.policy, budget=args.budget, combine=args.combine, random_seed=args.seed,
        progressbar=not args.no_progress, ranges=args.ranges,
    )
    return result, f"CIR caplet, strike {args.strike}: {len(arms)} arms, {args.policy}, {args.budget:g} s"


def write_outputs(result, out: Path) -> list[Path]:
    """InferenceData (netCDF), the run's plots and the printed summary, in folder ``out``."""
    from pmcbandit.diagnostics.plots import save_run_plots

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    idata_path = out / "run.nc"
    result.to_netcdf(idata_path)
    (out / "summary.txt").write_text(result.summary() + "\n")
    plots = save_run_plots(result, out)
    return [idata_path, out / "summary.txt", *map(Path, plots)]


if __name__ == "__main__":
    sys.exit(main())

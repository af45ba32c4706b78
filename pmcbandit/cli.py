"""Command line: ``pmcbandit evidence``, ``pmcbandit compare-models`` and ``pmcbandit price``.

Each runs under a bandit policy, prints its result (the combined estimate with its standard error
and the per-arm table, or the ranked table of models) and writes InferenceData (netCDF), the
summary and plots to ``--out``.

What the command line guarantees
--------------------------------
* A usage error is one ``pmcbandit: error: ...`` line on stderr and exit code 2, and every
  argument (numbers, files, the output folder) is checked before any model is built.
* ``--out`` is checked before the run (it must be a folder or not exist, in a writable place);
  outputs are written to a temporary folder beside it and moved into place only when complete.
* A finished run is never lost to a failure while writing. The estimate is printed before anything
  is written; if writing ``--out`` fails anyway (a full disk, a folder removed meanwhile, an error in
  a writer), each output is tried again on its own in a new folder of the system's temporary folder,
  so one failing writer (the netCDF, a plot) does not take the others with it (``summary.txt``, plain
  text, holds the estimate and the per-arm table). One line on stderr says why ``--out`` failed,
  where the saved files are and which could not be written.
* Exit codes: 0 when every output is in ``--out``; 2 for a usage error; 1 when the run finished
  but ``--out`` does not hold its outputs (saved elsewhere, or, if even that failed, only printed),
  so a script never reads an incomplete ``--out`` after a zero exit code.
* Each warning is printed once (the summary lists the result's warnings; any other is printed
  after it as ``warning: ...``).
"""

from __future__ import annotations

import argparse
import math
import os
import re
import runpy
import shutil
import sys
import tempfile
import warnings
from pathlib import Path

from pmcbandit.policies import POLICY_NAMES
from pmcbandit.policies.rewards import RANGE_NAMES
from pmcbandit.stats.combine import COMBINE_METHODS

__all__ = ["main", "build_parser", "write_outputs"]


class _Parser(argparse.ArgumentParser):
    """argparse, with a usage error reported as one line (exit code 2)."""

    def error(self, message):
        self.exit(2, f"{self.prog.split()[0]}: error: {message}\n")


_ROLE = re.compile(r":[a-z]+(?::[a-z]+)?:`~?([^`<]*?)(?:\s*<[^>]*>)?`")
_LITERAL = re.compile(r"``([^`]+)``")
_INTERPRETED = re.compile(r"`([^`]+)`")


def _plain(text: str) -> str:
    """``text`` with its reST markup rendered as plain text for a terminal: a cross-reference role becomes its
    target's last name, an inline literal its content, interpreted text its content in single quotes.
    """
    text = _ROLE.sub(lambda m: m.group(1).rsplit(".", 1)[-1], text)
    text = _LITERAL.sub(r"\1", text)
    return _INTERPRETED.sub(r"'\1'", text)


class _Formatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows an option's default unless it has none (None, or an off flag); help and descriptions in plain text
    (``_plain``).
    """

    def _get_help_string(self, action):
        if action.default is None or action.default is False:
            return action.help
        return super()._get_help_string(action)

    def _expand_help(self, action):
        return _plain(super()._expand_help(action))

    def _format_text(self, text):
        return super()._format_text(_plain(text))


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number > 0, got {text!r}") from None
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text!r}")
    return value


def _seed(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer >= 0, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be an integer >= 0, got {text!r}")
    return value


def _int_at_least(low: int, high: int | None = None):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None
        if value < low or (high is not None and value > high):
            bound = f"in [{low}, {high}]" if high is not None else f">= {low}"
            raise argparse.ArgumentTypeError(f"must be {bound}, got {text!r}")
        return value

    return parse


def _probability(text: str) -> float:
    value = _positive_float(text)
    if not 0.5 < value < 1:
        raise argparse.ArgumentTypeError(f"must be in (0.5, 1), got {text!r}")
    return value


def _model_file(text: str) -> Path:
    path = Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is a folder, not a Python file")
    if not path.is_file():
        raise argparse.ArgumentTypeError(f"no such file: {text!r}")
    if not os.access(path, os.R_OK):
        raise argparse.ArgumentTypeError(f"{text!r} is not readable")
    return path


def _common(parser: argparse.ArgumentParser, budget: float) -> None:
    parser.add_argument("--budget", type=_positive_float, default=budget, help="seconds of wall time")
    parser.add_argument("--policy", choices=[p for p in POLICY_NAMES if p != "oracle"], default="thompson",
                        help="bandit policy")
    parser.add_argument("--seed", type=_seed, default=0, help="random seed (an integer >= 0)")
    parser.add_argument("--out", type=Path, default=None,
                        help="output folder for InferenceData and plots (default: pmcbandit-<command>)")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")


def _estimate_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--combine", choices=COMBINE_METHODS, default="inverse_variance",
                        help="how the arms' estimates are combined")
    parser.add_argument("--ranges", choices=RANGE_NAMES, default="auto",
                        help="loss ranges (App. B): per arm, shared, or the policy's default (auto)")


def build_parser() -> argparse.ArgumentParser:
    """The ``pmcbandit`` parser: subcommands ``evidence``, ``compare-models``, ``price``, ``warm-up``, and
    ``--version``.
    """
    from pmcbandit import __version__

    formatter = _Formatter
    parser = _Parser(prog="pmcbandit", description=__doc__.splitlines()[0], formatter_class=formatter)
    parser.add_argument("--version", action="version", version=f"pmcbandit {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    about = "log marginal likelihood of a PyMC model (default: Bayesian logistic regression on Pima, T=50)"
    ev = sub.add_parser("evidence", formatter_class=formatter, help=about, description=about)
    ev.add_argument("--T", type=_int_at_least(1, 768), default=50, help="Pima rows used (1..768)")
    ev.add_argument("--model-file", type=_model_file, default=None,
                    help="a Python file defining a PyMC model named `model` (the file is executed to load it)")
    ev.add_argument("--smc", action="store_true", help="add PyMC's SMC (biased-consistent) to the pool")
    _common(ev, budget=20.0)
    ev.add_argument("--combine", choices=COMBINE_METHODS, default="inverse_variance",
                    help="how the arms' estimates are combined")

    about = "Bayes factors and posterior probabilities of PyMC models under one budget"
    cm = sub.add_parser("compare-models", formatter_class=formatter, help=about, description=about)
    cm.add_argument("--model-file", type=_model_file, action="append", required=True,
                    help="a Python file defining a PyMC model named `model`; give it once per model (>= 2)")
    cm.add_argument("--name", action="append", default=None,
                    help="the models' names, in the order of --model-file (default: the files' stems)")
    cm.add_argument("--prior", type=float, nargs="+", default=None,
                    help="prior model probabilities, in the order of --model-file (default: uniform)")
    cm.add_argument("--split", choices=("neyman", "even"), default="neyman",
                    help="how the budget's slices are given to the models")
    cm.add_argument("--target", choices=("log_bf", "probability"), default="log_bf",
                    help="what the allocation makes precise")
    cm.add_argument("--decide", type=_probability, default=None,
                    help="stop once the leading model's probability interval is above this")
    cm.add_argument("--slices", type=_int_at_least(2), default=None, help="slices of the budget (default 4 per model)")
    _common(cm, budget=60.0)
    cm.add_argument("--combine", choices=COMBINE_METHODS, default="inverse_variance",
                    help="how each model's arms are combined")

    about = "CIR caplet price with 16 importance-sampling drifts (Neufeld et al. 6.2)"
    pr = sub.add_parser("price", formatter_class=formatter, help=about, description=about)
    pr.add_argument("--strike", type=_positive_float, default=0.08, help="strike K")
    pr.add_argument("--paths-per-pull", type=_int_at_least(1), default=1000, help="paths per pull")
    _common(pr, budget=10.0)
    _estimate_options(pr)

    sub.add_parser("warm-up", formatter_class=formatter,
                   help="compile the numba kernels of evidence runs once, so that the first run does not "
                        "(make install and make demo run it)")
    return parser


def main(argv=None) -> int:
    """Run the command line on ``argv`` (``sys.argv[1:]`` when None); the exit code (module docstring)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    sub = parser._subparsers._group_actions[0].choices[args.command]
    if args.command == "warm-up":
        from pmcbandit.evidence.warm_up import warm_up

        print(f"compiled the evidence runs' numba kernels in {warm_up():.1f} s")
        return 0
    out = _check_out(sub, args.out or Path(f"pmcbandit-{args.command}"))
    if args.command == "compare-models":
        _check_compare_args(sub, args)
    from pmcbandit.exceptions import PmcBanditWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", PmcBanditWarning)
        try:
            if args.command == "evidence":
                result, title = _evidence(sub, args)
            elif args.command == "compare-models":
                result, title = _compare(sub, args)
            else:
                result, title = _price(args)
        except (TypeError, ValueError) as err:  # an argument the library refused
            sub.error(str(err))
    print(title)
    summary = result.summary()
    print(summary)
    shown = set(summary.splitlines())
    for message in dict.fromkeys(str(w.message) for w in caught):
        if f"warning: {message}" not in shown:
            print(f"warning: {message}")
    try:
        written = write_outputs(result, out)
    except Exception as err:  # the run is done: keep it whatever went wrong with --out
        print(_rescue(result, args.command, out, err), file=sys.stderr)
        return 1
    print(f"wrote {', '.join(str(p) for p in written)}")
    return 0


def _rescue(result, command: str, out: Path, err: Exception) -> str:
    """Save each output of ``result`` that can be written to a new temporary folder; the message saying where."""
    reason = f"could not write to {out} ({type(err).__name__}: {err})"
    try:
        rescue = Path(tempfile.mkdtemp(prefix=f"pmcbandit-{command}-"))
    except OSError as again:
        return f"pmcbandit: error: {reason}; nothing else could be saved ({again}): the estimate above is the record"
    failed = []
    for name, write in _outputs(result):
        try:
            write(rescue)
        except Exception as again:  # keep going: every other output is still worth saving
            failed.append(f"{name} ({type(again).__name__}: {again})")
    saved = sorted(p.name for p in rescue.iterdir())
    if not saved:
        shutil.rmtree(rescue, ignore_errors=True)
        return (f"pmcbandit: error: {reason}; nothing else could be saved ({'; '.join(failed)}): "
                "the estimate above is the record")
    missing = f"; not saved: {'; '.join(failed)}" if failed else ""
    return f"pmcbandit: error: {reason}; the run was saved to {rescue} ({', '.join(saved)}){missing}"


def _check_out(parser, out: Path) -> Path:
    """``--out`` must be a folder or not exist, with an existing writable parent (checked before the run)."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        parser.error(f"argument --out: {str(out)!r} exists and is not a folder")
    parent = out.resolve().parent
    if not parent.is_dir():
        parser.error(f"argument --out: the folder {str(parent)!r} does not exist")
    if not os.access(out if out.is_dir() else parent, os.W_OK):
        parser.error(f"argument --out: {str(out)!r} is not writable")
    return out


def _check_compare_args(parser, args) -> None:
    n = len(args.model_file)
    if n < 2:
        parser.error("argument --model-file: give at least two models to compare")
    names = args.name or [p.stem for p in args.model_file]
    if len(names) != n:
        parser.error(f"argument --name: give one name per --model-file ({n}), got {len(names)}")
    if len(set(names)) != n:
        parser.error(f"argument --name: the models' names must be distinct, got {names} (use --name)")
    if args.prior is not None:
        p = args.prior
        if len(p) != n or any(not (v >= 0 and math.isfinite(v)) for v in p) or abs(sum(p) - 1) > 1e-8:
            parser.error(f"argument --prior: must be {n} non-negative numbers summing to 1, got {p}")
    if args.slices is not None and args.slices < n:
        parser.error(f"argument --slices: must be at least the number of models ({n}), got {args.slices}")
    args.name = names


def _load_model(parser, path: Path):
    """Run the model file and return its ``model``; anything it raises is a usage error naming the file's line."""
    import pymc as pm

    try:
        namespace = runpy.run_path(os.fspath(path))
    except KeyboardInterrupt:
        raise
    except (Exception, SystemExit) as err:  # the user's file: one line saying where and what, no traceback
        parser.error(f"argument --model-file: {_where(err, path)}{type(err).__name__}: {_reason(err)}")
    model = namespace.get("model")
    if not isinstance(model, pm.Model):
        others = [name for name, value in namespace.items() if isinstance(value, pm.Model)]
        found = f" (it defines {', '.join(others)}: name the one to use `model`)" if others else ""
        parser.error(f"argument --model-file: {path} defines no PyMC model named `model`{found}")
    return model


def _where(err: BaseException, path: Path) -> str:
    """``"<file>, line <n>: "`` of the innermost line of ``path`` that ``err`` came from (just the file when none)."""
    line = None
    if isinstance(err, SyntaxError) and err.filename and Path(err.filename).resolve() == path.resolve():
        line = err.lineno
    else:
        tb = err.__traceback__
        while tb is not None:
            if Path(tb.tb_frame.f_code.co_filename).resolve() == path.resolve():
                line = tb.tb_lineno
            tb = tb.tb_next
    return f"{path}, line {line}: " if line is not None else f"{path}: "


def _reason(err: BaseException) -> str:
    """The exception's message on one line (a SyntaxError's without its location, said by :func:`_where`)."""
    if isinstance(err, SyntaxError):
        text = err.msg
    elif isinstance(err, SystemExit):
        text = f"the file exited (code {err.code!r})"
    else:
        text = str(err) or "(no message)"
    return " ".join(text.split())


def _evidence(parser, args):
    from pmcbandit.evidence import estimate_evidence, evidence_arms

    if args.model_file is not None:
        model, title = _load_model(parser, args.model_file), f"model from {args.model_file}"
    else:
        from models import pima

        model = pima.logistic_regression(*pima.load_data(args.T))
        title = f"Bayesian logistic regression on Pima, T={args.T}"
    # The default pool is sized for the budget inside estimate_evidence; with SMC it is built here.
    arms = evidence_arms(model, smc=True, budget_seconds=args.budget) if args.smc else None
    result = estimate_evidence(
        model, args.policy, arms=arms, budget=args.budget, combine=args.combine,
        random_seed=args.seed, progressbar=not args.no_progress,
    )
    return result, f"{title}: {len(result.arm_names)} arms, {args.policy}, {args.budget:g} s"


def _compare(parser, args):
    from pmcbandit.evidence import compare_models

    models = {name: _load_model(parser, path) for name, path in zip(args.name, args.model_file)}
    result = compare_models(
        models, args.policy, budget=args.budget, prior=args.prior, random_seed=args.seed,
        split=args.split, target=args.target, decide=args.decide, slices=args.slices,
        combine=args.combine, progressbar=not args.no_progress,
    )
    return result, f"{len(models)} models ({', '.join(models)}): {args.policy}, {args.budget:g} s"


def _price(args):
    from models.cir import caplet_arms

    import pmcbandit

    arms = caplet_arms(strike=args.strike, paths_per_pull=args.paths_per_pull)
    result = pmcbandit.run(
        arms, args.policy, budget=args.budget, combine=args.combine, random_seed=args.seed,
        progressbar=not args.no_progress, ranges=args.ranges,
    )
    return result, f"CIR caplet, strike {args.strike}: {len(arms)} arms, {args.policy}, {args.budget:g} s"


def write_outputs(result, out: Path) -> list[Path]:
    """The result's files in folder ``out``, written to a temporary folder beside it and moved into
    place when all are written (an existing file of the same name is replaced).

    A run: ``run.nc`` (InferenceData), ``summary.txt`` and its plots. A model comparison:
    ``comparison.nc``, ``table.csv``, ``summary.txt``, ``comparison.png`` and ``<model>.nc`` per model.
    The first failure is raised and ``out`` is left as it was.
    """
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        for _, write in _outputs(result):
            write(staging)
        out.mkdir(exist_ok=True)
        written = []
        for path in sorted(staging.iterdir()):
            os.replace(path, out / path.name)
            written.append(out / path.name)
        return written
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _outputs(result) -> list[tuple]:
    """``(name, write)`` for each output of ``result``: ``write(folder)`` writes it there; the summary first."""
    from pmcbandit._compat import write_netcdf
    from pmcbandit.evidence import ModelComparison

    def summary(folder):
        (folder / "summary.txt").write_text(result.summary() + "\n")

    if isinstance(result, ModelComparison):
        def comparison_png(folder):
            import matplotlib.pyplot as plt

            fig = result.plot()
            try:
                fig.savefig(folder / "comparison.png", dpi=100)
            finally:
                plt.close(fig)

        return [
            ("summary.txt", summary),
            ("comparison.nc", lambda folder: write_netcdf(result.to_inference_data(), folder / "comparison.nc")),
            ("table.csv", lambda folder: result.to_dataframe().to_csv(folder / "table.csv")),
            *((f"{name}.nc", lambda folder, run=run, name=name: run.to_netcdf(folder / f"{name}.nc"))
              for name, run in result.results.items()),
            ("comparison.png", comparison_png),
        ]

    def plots(folder):
        from pmcbandit.diagnostics.plots import save_run_plots

        save_run_plots(result, folder)

    return [
        ("summary.txt", summary),
        ("run.nc", lambda folder: result.to_netcdf(folder / "run.nc")),
        ("plots", plots),
    ]


if __name__ == "__main__":
    sys.exit(main())

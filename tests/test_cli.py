"""The command line: ``pmcbandit evidence``, ``pmcbandit compare-models`` and ``pmcbandit price``.

Each command is run in-process through :func:`pmcbandit.cli.main` with a short wall-time
budget; it must print its result and write InferenceData, ``summary.txt`` and the plots to
``--out``. Usage errors are one ``error:`` line with exit code 2, found before any model is built;
a finished run is never lost to a bad ``--out``; each warning is printed once.
"""

import os
import textwrap
from pathlib import Path

import arviz as az
import pytest

from pmcbandit.cli import main

PLOTS = ("allocation.png", "running_estimate.png", "variance_cost.png", "run.png")


def check_outputs(out, printed: str, head: str) -> None:
    assert head in printed
    for name in ("run.nc", "summary.txt", *PLOTS):
        path = out / name
        assert path.is_file() and path.stat().st_size > 0, name
    summary = (out / "summary.txt").read_text()
    assert head in summary
    idata = az.from_netcdf(out / "run.nc")
    assert idata.sample_stats.sizes["pull"] >= 1


@pytest.mark.slow
def test_evidence_pima(tmp_path, capsys):
    out = tmp_path / "pima"
    assert main(["evidence", "--T", "5", "--budget", "3", "--no-progress", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "Bayesian logistic regression on Pima, T=5" in printed
    for arm in ("ais-", "laplace-t", "laplace-t20", "prior-is"):  # AIS step counts are sized for the budget
        assert arm in printed
    check_outputs(out, printed, "log Z")


def test_evidence_model_file(tmp_path, capsys):
    model_file = tmp_path / "my_model.py"
    model_file.write_text(textwrap.dedent(
        """
        import numpy as np
        import pymc as pm

        with pm.Model() as model:
            mu = pm.Normal("mu", 0.0, 2.0)
            pm.Normal("y", mu, 1.0, observed=np.array([0.3, -0.2, 1.1]))
        """
    ))
    out = tmp_path / "user"
    argv = ["evidence", "--model-file", str(model_file), "--budget", "2", "--seed", "3",
            "--policy", "ucb_v", "--combine", "uniform", "--no-progress", "--out", str(out)]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert f"model from {model_file}" in printed and "ucb_v" in printed
    check_outputs(out, printed, "log Z")


def usage_error(argv, capsys) -> str:
    """Run ``argv``; it must exit with code 2 after one ``pmcbandit: error:`` line on stderr."""
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("pmcbandit: error: "), err
    return err


def test_evidence_model_file_without_model(tmp_path, capsys):
    model_file = tmp_path / "empty.py"
    model_file.write_text("x = 1\n")
    err = usage_error(["evidence", "--model-file", str(model_file), "--no-progress", "--out", str(tmp_path / "o")],
                      capsys)
    assert "defines no PyMC model named `model`" in err


@pytest.mark.parametrize("source, line, message", [
    ("import math\nx = (1,\n", 2, "SyntaxError: '(' was never closed"),
    ("import math\n\nx = undefined_name + 1\n", 3, "NameError: name 'undefined_name' is not defined"),
    ("def build():\n    raise RuntimeError('no data\\nhere')\n\nmodel = build()\n", 2,
     "RuntimeError: no data here"),
    ("import sys\nsys.exit(3)\n", 2, "SystemExit: the file exited (code 3)"),
])
def test_a_model_file_that_fails_to_load_is_one_error_line(source, line, message, tmp_path, capsys):
    model_file = tmp_path / "broken.py"
    model_file.write_text(source)
    for command in (["evidence", "--model-file", str(model_file)],
                    ["compare-models", "--model-file", str(model_file), "--model-file", str(model_file),
                     "--name", "a", "--name", "b"]):
        err = usage_error([*command, "--out", str(tmp_path / "o")], capsys)
        assert f"argument --model-file: {model_file}, line {line}: {message}" in err, err
        assert "Traceback" not in err


def test_a_model_file_naming_its_model_otherwise_is_told_which(tmp_path, capsys):
    model_file = tmp_path / "other.py"
    model_file.write_text("import pymc as pm\n\nwith pm.Model() as m1:\n    pm.Normal('x')\n")
    err = usage_error(["evidence", "--model-file", str(model_file), "--out", str(tmp_path / "o")], capsys)
    assert "defines no PyMC model named `model` (it defines m1" in err


def test_a_folder_as_model_file_is_a_usage_error(tmp_path, capsys):
    err = usage_error(["evidence", "--model-file", str(tmp_path), "--out", str(tmp_path / "o")], capsys)
    assert "is a folder, not a Python file" in err


@pytest.mark.parametrize("argv", [[], ["evidence"], ["compare-models"], ["price"]])
def test_help_is_plain_text(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main([*argv, "--help"])
    text = capsys.readouterr().out
    assert exc.value.code == 0 and text.startswith("usage: pmcbandit")
    for markup in ("``", ":class:", ":func:", ":mod:", ":math:", "`"):
        assert markup not in text, (markup, text)


@pytest.mark.parametrize("T", ["0", "769"])
def test_evidence_rejects_T_out_of_range(T, tmp_path, capsys):
    assert "--T: must be in [1, 768]" in usage_error(["evidence", "--T", T, "--out", str(tmp_path / "o")], capsys)


@pytest.mark.parametrize("argv, message", [
    (["evidence", "--budget", "-1"], "--budget: must be a finite number > 0"),
    (["evidence", "--budget", "0"], "--budget: must be a finite number > 0"),
    (["evidence", "--budget", "nan"], "--budget: must be a finite number > 0"),
    (["evidence", "--budget", "x"], "--budget: must be a number > 0"),
    (["evidence", "--seed", "-3"], "--seed: must be an integer >= 0"),
    (["evidence", "--model-file", "no/such/file.py"], "--model-file: no such file"),
    (["price", "--strike", "-1"], "--strike: must be a finite number > 0"),
    (["price", "--paths-per-pull", "0"], "--paths-per-pull: must be >= 1"),
    (["compare-models"], "the following arguments are required: --model-file"),
    (["compare-models", "--model-file", "pyproject.toml"], "give at least two models"),
    (["compare-models", "--model-file", "pyproject.toml", "--model-file", "pyproject.toml"], "must be distinct"),
    (["compare-models", "--model-file", "pyproject.toml", "--model-file", "README.md", "--prior", "0.7", "0.7"],
     "--prior: must be 2 non-negative numbers summing to 1"),
    (["compare-models", "--model-file", "pyproject.toml", "--model-file", "README.md", "--decide", "0.3"],
     "--decide: must be in (0.5, 1)"),
    (["evidence", "--policy", "nope"], "invalid choice"),
])
def test_usage_errors_are_one_line_before_any_model_is_built(argv, message, capsys, monkeypatch):
    import runpy

    def no_model_building(*args, **kwargs):
        raise AssertionError("a model file was executed before the arguments were checked")

    monkeypatch.setattr(runpy, "run_path", no_model_building)
    assert message in usage_error(argv, capsys)


def test_out_that_is_a_file_is_refused_before_the_run(tmp_path, capsys, monkeypatch):
    import pmcbandit.cli as cli

    monkeypatch.setattr(cli, "_evidence", lambda *a: pytest.fail("the run started"))
    afile = tmp_path / "afile"
    afile.write_text("keep me")
    assert "exists and is not a folder" in usage_error(["evidence", "--out", str(afile)], capsys)
    assert "does not exist" in usage_error(["evidence", "--out", str(tmp_path / "no" / "dir")], capsys)
    assert afile.read_text() == "keep me"


def test_version_and_defaults_in_help(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0 and capsys.readouterr().out.startswith("pmcbandit ")
    with pytest.raises(SystemExit):
        main(["evidence", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "(default: thompson)" in text and "(default: inverse_variance)" in text and "(default: 20.0)" in text


def test_a_finished_run_is_never_lost(tmp_path, capsys, monkeypatch):
    """Writing --out fails after the run (the folder was replaced by a file meanwhile): the run is
    saved elsewhere and the path printed."""
    import pmcbandit.cli as cli
    from pmcbandit import run
    from pmcbandit.arms import CallableArm

    out = tmp_path / "out"

    def quick_run(args):
        result = run([CallableArm(lambda rng: rng.normal(), name="a"), CallableArm(lambda rng: rng.normal(), name="b")],
                     "ucb1", budget=__import__("pmcbandit").Pulls(20), random_seed=1, progressbar=False)
        out.write_text("in the way")
        os.chmod(tmp_path, 0o555)
        return result, "quick"

    monkeypatch.setattr(cli, "_price", quick_run)
    try:
        assert main(["price", "--no-progress", "--out", str(out)]) == 1
    finally:
        os.chmod(tmp_path, 0o755)
    err = capsys.readouterr().err
    saved = err.split("the run was saved to ")[1].split(" (")[0]
    assert (az.from_netcdf(f"{saved}/run.nc").sample_stats.sizes["pull"]) == 20


def test_a_failing_writer_loses_no_other_output(tmp_path, capsys, monkeypatch):
    """The netCDF writer fails (in --out and again in the rescue folder): the estimate is printed, --out is left
    untouched, the summary and the plots are saved elsewhere, and one stderr line says where and what is missing."""
    import tempfile

    import pmcbandit._compat as compat
    import pmcbandit.cli as cli
    from pmcbandit import Pulls, run
    from pmcbandit.arms import CallableArm

    def quick_run(args):
        arms = [CallableArm(lambda rng: rng.normal(), name="a"), CallableArm(lambda rng: rng.normal(), name="b")]
        return run(arms, "ucb1", budget=Pulls(20), random_seed=1, progressbar=False), "quick"

    def broken_writer(idata, path):
        raise OSError("disk full")

    monkeypatch.setattr(cli, "_price", quick_run)
    monkeypatch.setattr(compat, "write_netcdf", broken_writer)
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    out = tmp_path / "out"
    assert main(["price", "--no-progress", "--out", str(out)]) == 1
    captured = capsys.readouterr()
    assert "estimate =" in captured.out
    assert not out.exists() or not any(out.iterdir())
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and "could not write to" in lines[0] and "OSError: disk full" in lines[0]
    assert "not saved: run.nc (OSError: disk full)" in lines[0]
    saved = Path(lines[0].split("the run was saved to ")[1].split(" (")[0])
    assert saved.parent == tmp_path / "tmp"
    assert "estimate =" in (saved / "summary.txt").read_text()
    assert not (saved / "run.nc").exists() and any(p.suffix == ".png" for p in saved.iterdir())


def test_compare_models_command(tmp_path, capsys):
    files = []
    for name, body in (("flat", "mu = pm.Normal('mu', 0.0, 3.0)"), ("tight", "mu = pm.Normal('mu', 0.0, 0.3)")):
        path = tmp_path / f"{name}.py"
        path.write_text(textwrap.dedent(f"""
            import numpy as np
            import pymc as pm

            with pm.Model() as model:
                {body}
                pm.Normal("y", mu, 1.0, observed=np.array([0.3, -0.2, 1.1]))
            """))
        files += ["--model-file", str(path)]
    out = tmp_path / "cmp"
    assert main(["compare-models", *files, "--budget", "4", "--seed", "1", "--no-progress", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "2 models (flat, tight)" in printed and "best model" in printed
    for name in ("comparison.nc", "table.csv", "summary.txt", "comparison.png", "flat.nc", "tight.nc"):
        assert (out / name).is_file(), name
    warned = [line for line in printed.splitlines() if line.startswith("warning: ")]
    assert len(warned) == len(set(warned))
    assert az.from_netcdf(out / "flat.nc").sample_stats["log_marginal_likelihood"].size == 1


def test_unknown_policy_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["evidence", "--policy", "nope"])
    assert exc.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


def test_price(tmp_path, capsys):
    pytest.importorskip("models.cir", reason="models/cir.py (CIR caplet arms, helper-4) is not in this checkout")
    out = tmp_path / "price"
    argv = ["price", "--strike", "0.07", "--budget", "2", "--ranges", "shared", "--no-progress", "--out", str(out)]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "CIR caplet, strike 0.07" in printed
    check_outputs(out, printed, "estimate =")
    assert az.from_netcdf(out / "run.nc").sample_stats.attrs["ranges"] == "shared"

"""The command line (issue 3, "CLI"): ``pmcbandit evidence`` and ``pmcbandit price``.

Each command is run in-process through :func:`pmcbandit.cli.main` with a short wall-time
budget; it must print the combined estimate and the per-arm table and write the run's
InferenceData (``run.nc``), ``summary.txt`` and the plots to ``--out``.
"""

import textwrap

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


def test_evidence_model_file_without_model(tmp_path):
    model_file = tmp_path / "empty.py"
    model_file.write_text("x = 1\n")
    with pytest.raises(SystemExit, match="no variable named `model`"):
        main(["evidence", "--model-file", str(model_file), "--no-progress", "--out", str(tmp_path / "o")])


@pytest.mark.parametrize("T", ["0", "769"])
def test_evidence_rejects_T_out_of_range(T, tmp_path):
    with pytest.raises(SystemExit, match=r"--T must be in \[1, 768\]"):
        main(["evidence", "--T", T, "--no-progress", "--out", str(tmp_path / "o")])


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

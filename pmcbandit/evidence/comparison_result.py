r"""The result of :func:`pmcbandit.compare_models`: a ranked table of evidences, Bayes factors and
posterior model probabilities, and the per-model evidence runs it rests on.

Posterior model probabilities
-----------------------------
With prior probabilities :math:`\pi_k` and evidences :math:`Z_k`,
:math:`p_k = \pi_k Z_k / \sum_j \pi_j Z_j` (Kass & Raftery 1995, Sec. 2). The models' runs are
independent, so the estimates :math:`\log\hat Z_k` are independent with standard errors
:math:`s_k`, and

* the log Bayes factor :math:`\log B_{ab} = \log\hat Z_a - \log\hat Z_b` has
  :math:`\mathrm{se} = \sqrt{s_a^2 + s_b^2}`;
* the interval of :math:`p_k` is built by the **delta method on the logit scale**:
  :math:`\ell_k = \operatorname{logit} p_k = \log\pi_k + \log Z_k - \log\sum_{j\ne k}\pi_j Z_j`
  has gradient 1 in :math:`\log Z_k` and :math:`-q_j` in :math:`\log Z_j`
  (:math:`q_j = \pi_j Z_j / \sum_{l\ne k}\pi_l Z_l`), so
  :math:`\mathrm{se}(\ell_k)^2 = s_k^2 + \sum_{j\ne k} q_j^2 s_j^2`, and the interval is
  :math:`\operatorname{expit}(\hat\ell_k \pm z_{1-\alpha/2}\,\mathrm{se}(\ell_k))`. For two models
  :math:`\ell_a` is the log Bayes factor plus the log prior odds, so the interval is exactly the
  log Bayes factor's normal interval mapped through the logistic function; with more models it is
  first order in the :math:`s_j` (its coverage is checked in the tests).

What is declared
----------------
Every model keeps its evidence checks (Pareto :math:`\hat k`, the arms' consistency, the interval
status of :class:`~pmcbandit.result.RunResult`). :attr:`ModelComparison.best` names the leading
model only when every model's interval is reliable (``"ok"`` or ``"random_effects"``): a flagged
evidence could be anything, so it could be the best; otherwise ``best`` is ``None`` and a warning
says which models are flagged. An evidence no second estimator family checked (``"no_cross_check"``) is
flagged too: an error its one family shares would move it by more than its standard error.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from scipy import special, stats

from pmcbandit.base import declare_result
from pmcbandit.evidence.estimate import EvidenceResult
from pmcbandit.exceptions import NoGuaranteeWarning, PmcBanditWarning, WarningText

__all__ = ["ModelComparison", "Probabilities", "model_probabilities", "TABLE_COLUMNS"]

TABLE_COLUMNS = ("log_z", "log_z_se", "log_bf", "log_bf_se", "probability", "probability_lower",
                 "probability_upper", "interval_status")
_RELIABLE = ("ok", "random_effects")


class Probabilities(NamedTuple):
    """Posterior model probabilities with their delta-method logit-scale intervals (module docstring)."""

    probability: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    logit_se: np.ndarray


def model_probabilities(log_z, log_z_se, prior, level: float = 0.95) -> Probabilities:
    """:math:`p_k` and its ``level`` interval (module docstring) from independent ``log_z ± log_z_se``.

    A model with prior probability 0 has probability 0 and interval [0, 0]; a non-finite estimate or
    SE among the models with positive prior gives NaN probabilities and the interval [0, 1].
    """
    log_z = np.asarray(log_z, dtype=float)
    se = np.asarray(log_z_se, dtype=float)
    prior = np.asarray(prior, dtype=float)
    n = log_z.size
    p = np.zeros(n)
    lower = np.zeros(n)
    upper = np.zeros(n)
    logit_se = np.full(n, np.nan)
    live = prior > 0
    if not (np.all(np.isfinite(log_z[live])) and np.all(np.isfinite(se[live]))):
        p[live], lower[live], upper[live] = np.nan, 0.0, 1.0
        return Probabilities(p, lower, upper, logit_se)
    a = np.where(live, np.log(np.where(live, prior, 1.0)) + log_z, -np.inf)
    p = np.exp(a - special.logsumexp(a))
    z = stats.norm.ppf(0.5 + level / 2)
    for k in np.flatnonzero(live):
        others = live.copy()
        others[k] = False
        if not others.any():
            p[k], lower[k], upper[k], logit_se[k] = 1.0, 1.0, 1.0, 0.0
            continue
        rest = special.logsumexp(a[others])
        q = np.exp(a[others] - rest)
        logit = a[k] - rest
        logit_se[k] = math.sqrt(se[k] ** 2 + float(np.sum(q**2 * se[others] ** 2)))
        lower[k] = special.expit(logit - z * logit_se[k])
        upper[k] = special.expit(logit + z * logit_se[k])
    return Probabilities(p, lower, upper, logit_se)


@declare_result("model_comparison")
class ModelComparison:
    """What :func:`pmcbandit.compare_models` returns.

    Parameters
    ----------
    results : dict of str -> EvidenceResult
        Each model's evidence run (its slices merged), in the order the models were given.
    prior : ndarray
        Prior model probabilities, in the same order.
    allocation : list of (int, str, float)
        The slices in the order they were run: (slice index, model name, standard error of the
        reported log Bayes factor after the slice; NaN before every model had a slice).
    settings : dict
        Budget, slices, allocation rule, target, stop rule, seeds, setup seconds per model.
    notes : sequence of str
    level : float
        Level of the probability intervals.

    Attributes
    ----------
    table : pandas.DataFrame
        Indexed by model name, best (largest posterior probability) first, with the columns
        ``log_z``, ``log_z_se``, ``log_bf`` (against the best), ``log_bf_se``, ``probability``,
        ``probability_lower``, ``probability_upper`` and ``interval_status``.
    best : str or None
        The leading model, or ``None`` when some model's evidence interval is flagged.
    """

    def __init__(self, results: dict, prior, allocation, settings: dict, notes=(), level: float = 0.95):
        self.results: dict[str, EvidenceResult] = dict(results)
        self.names = list(self.results)
        self.prior = np.asarray(prior, dtype=float)
        self.allocation = list(allocation)
        self.settings = dict(settings)
        self.notes = tuple(notes)
        self.level = float(level)

    @property
    def log_z(self) -> np.ndarray:
        return np.array([r.log_z for r in self.results.values()])

    @property
    def log_z_se(self) -> np.ndarray:
        return np.array([r.log_z_se for r in self.results.values()])

    @property
    def interval_status(self) -> list[str]:
        return [r.interval_status for r in self.results.values()]

    @property
    def probabilities(self) -> Probabilities:
        return model_probabilities(self.log_z, self.log_z_se, self.prior, self.level)

    @property
    def stopped_by(self) -> str:
        return str(self.settings.get("stopped_by", ""))

    @property
    def samples(self) -> int:
        """Pulls made by all the models' runs, faulty ones included."""
        return int(sum(r.samples for r in self.results.values()))

    def _order(self) -> np.ndarray:
        """Model indices by decreasing posterior probability (then log Z); NaN last."""
        p = self.probabilities.probability
        key = np.where(np.isfinite(p), p, -np.inf)
        lz = np.where(np.isfinite(self.log_z), self.log_z, -np.inf)
        return np.lexsort((-lz, -key))

    def _index(self, name, parameter: str) -> int:
        if name not in self.results:
            raise ValueError(f"The '{parameter}' parameter of ModelComparison.log_bf must be one of {self.names}. "
                             f"Got {name!r} instead.")
        return self.names.index(name)

    def log_bf(self, a: str, b: str) -> tuple[float, float]:
        """``(log B_ab, se)``: ``log Z_a - log Z_b`` and ``sqrt(se_a² + se_b²)`` (independent runs)."""
        i, j = self._index(a, "a"), self._index(b, "b")
        if i == j:
            return 0.0, 0.0
        return float(self.log_z[i] - self.log_z[j]), float(math.hypot(self.log_z_se[i], self.log_z_se[j]))

    @property
    def flagged(self) -> list[str]:
        """Models whose evidence interval is not reliable (status other than ``ok``/``random_effects``)."""
        return [n for n, s in zip(self.names, self.interval_status) if s not in _RELIABLE]

    @property
    def best(self) -> str | None:
        """The leading model, or ``None`` when any evidence is flagged (module docstring)."""
        if self.flagged:
            return None
        return self.names[int(self._order()[0])]

    @property
    def table(self):
        """The ranked table (class docstring), a fresh ``pandas.DataFrame``."""
        import pandas as pd

        order = self._order()
        lead = int(order[0])
        probs = self.probabilities
        rows = {}
        for k in order:
            name = self.names[k]
            lbf, lbf_se = self.log_bf(name, self.names[lead])
            rows[name] = (self.log_z[k], self.log_z_se[k], lbf, lbf_se, probs.probability[k], probs.lower[k],
                          probs.upper[k], self.interval_status[k])
        table = pd.DataFrame.from_dict(rows, orient="index", columns=list(TABLE_COLUMNS))
        table.index.name = "model"
        return table

    def to_dataframe(self):
        """The table plus the slices each model got and the wall seconds of its runs."""
        table = self.table
        slices = {n: 0 for n in self.names}
        for _, name, _ in self.allocation:
            slices[name] += 1
        table["slices"] = [slices[n] for n in table.index]
        table["pulls"] = [len(self.results[n].history) for n in table.index]
        table["prior"] = [self.prior[self.names.index(n)] for n in table.index]
        return table

    def warnings(self) -> list[WarningText]:
        """What the user must know: flagged evidences (no winner declared) and each model's own warnings."""
        out = list(self.notes)
        flagged = self.flagged
        if flagged:
            detail = ", ".join(f"{n!r} ({self.results[n].interval_status.replace('_', ' ')})" for n in flagged)
            out.append(WarningText(
                f"no model is declared best: the evidence of {detail} has no reliable interval, so it could be any "
                "value; give compare_models a larger budget or fix those models' evidence runs",
                NoGuaranteeWarning, "undecided"))
        for name, result in self.results.items():
            out.extend(WarningText(f"model {name!r}: {w}", getattr(w, "category", PmcBanditWarning),
                                   getattr(w, "topic", "")) for w in result.warnings())
        return out

    def summary(self) -> str:
        """The ranked table, the decision (or why there is none), the allocation, the warnings."""
        t = self.table
        pct = f"{100 * self.level:g}%"
        lines = [f"{'model':>16} {'log Z':>12} {'± se':>9} {'log BF':>10} {'± se':>9} {'P(model)':>9} "
                 f"{pct + ' interval':>19}  status"]
        for name, row in t.iterrows():
            lines.append(f"{name!s:>16} {row.log_z:>12.4f} {row.log_z_se:>9.4f} {row.log_bf:>10.4f} "
                         f"{row.log_bf_se:>9.4f} {row.probability:>9.4f} {row.probability_lower:>9.4f}.."
                         f"{row.probability_upper:<9.4f}  {row.interval_status}")
        best = self.best
        lines.append(f"best model: {best!r}" if best is not None else "best model: none declared (see warnings)")
        slices = {n: 0 for n in self.names}
        for _, name, _ in self.allocation:
            slices[name] += 1
        lines.append(f"stopped by {self.stopped_by}; budget {self.settings.get('budget')} in "
                     f"{len(self.allocation)} slices ({self.settings.get('split')}): "
                     + ", ".join(f"{n} {s}" for n, s in slices.items()))
        lines.extend(f"warning: {w}" for w in self.warnings())
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<ModelComparison: {len(self.names)} models>\n{self.summary()}"

    def _repr_html_(self) -> str:
        import html

        return f"<pre>{html.escape(repr(self))}</pre>"

    def plot(self, level: float = 0.95, fig=None):
        """Log Z and the log Bayes factors against the best, with ``level`` intervals, and the
        slices each model got (:func:`pmcbandit.diagnostics.model_plots.plot_model_comparison`).
        """
        from pmcbandit.diagnostics.model_plots import plot_model_comparison

        return plot_model_comparison(self, level=level, fig=fig)

    def to_inference_data(self):
        """``arviz.InferenceData``: group ``model_summary`` (dim ``model``: the table's columns, prior and
        slices), ``sample_stats`` (dim ``slice``: the model each slice went to and the log-BF SE after
        it) and the settings in ``attrs``; each model's own run is ``results[name].to_inference_data()``.
        """
        from pmcbandit.diagnostics.arviz_io import model_comparison_to_inference_data

        return model_comparison_to_inference_data(self)

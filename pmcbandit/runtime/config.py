"""The frozen configuration of a run: its settings, its checkpoint fingerprint, its InferenceData attrs.

:func:`pmcbandit.run` and :func:`pmcbandit.identify` validate their arguments once and freeze
them into a :class:`RunConfig`. The same object

* is the run's ``settings`` (``result.settings``: a JSON-friendly dict, with ``stopped_by`` added
  when the run ends),
* fingerprints a checkpoint: a run resumes a checkpoint only if every field of
  :data:`FINGERPRINT` is equal (arms, learner, reward, bounds, seed streams), and
* becomes the InferenceData ``attrs`` (:mod:`pmcbandit.diagnostics.arviz_io`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

__all__ = ["RunConfig", "FINGERPRINT"]

#: Fields a checkpoint must share with the run that resumes it.
FINGERPRINT = ("kind", "policy", "policy_params", "reward", "bounds", "ranges", "centre", "arm_names", "log_scale",
               "streams", "k", "delta")


@dataclass(frozen=True)
class RunConfig:
    """Every setting of one run, validated (see the module docstring).

    ``kind`` is ``"allocation"`` (a policy allocating a budget, :func:`pmcbandit.run`) or
    ``"identification"`` (a best-K algorithm, :func:`pmcbandit.identify`); fields that do not
    apply to a kind are ``None``. ``policy`` names the policy or identification algorithm and
    ``policy_params`` its parameters; ``budget`` is the budget as the user gave it
    (:func:`~pmcbandit.runtime.budget.budget_label`); ``streams`` the seed streams' JSON form
    (:class:`pmcbandit.runtime.streams.Streams`). ``executor`` is the kind of executor the pulls ran on
    (``"serial"``, ``"threads"``, ``"processes"``, ``"dask"`` or a custom executor's ``kind``) and
    ``workers`` its worker count (threads, processes or Dask workers); neither is in the fingerprint: a run
    stopped on a cluster may resume in-process.
    """

    kind: str
    policy: str
    policy_params: tuple
    budget: str
    arm_names: tuple
    families: tuple
    log_scale: bool
    streams: dict
    max_faults: int
    max_in_flight: int
    pull_timeout: float | None
    combine: str | None = None
    reward: str | None = None
    bounds: tuple | None = None
    ranges: str | None = None
    centre: object = None
    cross_check_share: float | None = None
    max_decision_share: float | None = None
    k: int | None = None
    delta: float | None = None
    executor: str = "serial"
    workers: int = 1

    def settings(self, **extra) -> dict:
        """The settings as plain JSON-friendly values (tuples become lists), plus ``extra``."""
        out = {f.name: _plain(getattr(self, f.name)) for f in dataclasses.fields(self)}
        out.update(extra)
        return out

    def fingerprint(self) -> dict:
        """The fields of :data:`FINGERPRINT`, as :meth:`settings` writes them."""
        settings = self.settings()
        return {key: settings[key] for key in FINGERPRINT}


def _plain(value):
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value

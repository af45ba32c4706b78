"""Model evidence and Bayes factors of PyMC models: the evidence doors and what they assemble.

What lives here:

* :mod:`~pmcbandit.evidence.estimate` — the door :func:`estimate_evidence` and its result,
  :class:`EvidenceResult` (a :class:`~pmcbandit.result.RunResult` read as ``log Z ± se``);
* :mod:`~pmcbandit.evidence.pool` — :func:`evidence_arms`, the default pool of evidence arms
  (AIS, Laplace-centred and prior importance sampling, nested sampling: :mod:`~pmcbandit.evidence.nested_pool`)
  sized for a budget;
* :mod:`~pmcbandit.evidence.importance` and :mod:`~pmcbandit.evidence.pilots` — the importance
  arms' proposals and the annealing and posterior pilots that fit them;
* :mod:`~pmcbandit.evidence.trace`, :mod:`~pmcbandit.evidence.trace_arms`, :mod:`~pmcbandit.evidence.trace_local`
  and :mod:`~pmcbandit.evidence.trace_pilot` — a posterior trace the user already has: read and checked, the
  importance arms fitted to its draws, Laplace-t arms at the mode one search from their mean reaches, and the HMC AIS
  arm's settings fitted to them in place of the annealing pilot;
* :mod:`~pmcbandit.evidence.comparison` — the door :func:`compare_models` (one budget across
  models, allocated in slices) and :mod:`~pmcbandit.evidence.comparison_result` — its result,
  :class:`ModelComparison`; :mod:`~pmcbandit.evidence.slices` merges a model's slices into one run.

It may import the helpers (``_rng``, ``_validation``, ``base``, ``exceptions``), ``stats``,
``arms``, ``policies``, ``runtime``, and the ``run`` door with its ``result``; results reach
``diagnostics`` only lazily, inside ``plot()`` and ``to_inference_data()``. Nothing below imports
from here.
"""

from pmcbandit.evidence.comparison import compare_models
from pmcbandit.evidence.comparison_result import ModelComparison
from pmcbandit.evidence.estimate import EvidenceResult, estimate_evidence
from pmcbandit.evidence.pool import evidence_arms

__all__ = ["estimate_evidence", "evidence_arms", "EvidenceResult", "compare_models", "ModelComparison"]

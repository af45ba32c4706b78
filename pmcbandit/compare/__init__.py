"""Compare estimators: which are the most efficient for a model, with confidence 1 - delta.

:func:`compare_samplers` (:mod:`pmcbandit.compare.compare`) ranks arms by efficiency, the inverse of
variance times cost, learnt from pairs of independent pulls (:mod:`~pmcbandit.compare.efficiency`),
with confidence sequences (:mod:`~pmcbandit.compare.confidence`) and a validity gate that keeps biased
arms out of the ranking (:mod:`~pmcbandit.compare.gate`).

May import: the helpers, :mod:`pmcbandit.stats`, :mod:`pmcbandit.arms`, :mod:`pmcbandit.runtime`
and :mod:`pmcbandit.identification`'s validators; ArviZ only through :mod:`pmcbandit.diagnostics`,
lazily, from the result's ``to_inference_data``/``plot``.
"""

from pmcbandit.compare.compare import compare_samplers
from pmcbandit.compare.result import ComparisonResult, EfficiencyRatio

__all__ = ["compare_samplers", "ComparisonResult", "EfficiencyRatio"]

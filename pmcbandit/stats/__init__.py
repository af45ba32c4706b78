"""Statistics with NumPy and SciPy only: combining estimates, testing their agreement, checking
importance weights, bounding a variance.

:mod:`~pmcbandit.stats.combine` (uniform, inverse-variance and cross-fitted combination, standard errors,
intervals), :mod:`~pmcbandit.stats.consistency` (Cochran's Q / Welch's F, random effects) and
:mod:`~pmcbandit.stats.psis` (Pareto :math:`\\hat k` of importance weights, Vehtari et al. 2024) over
:mod:`~pmcbandit.stats.pareto_tail` (the generalized-Pareto fit to their upper tail, and the variance it implies), and
:mod:`~pmcbandit.stats.posterior_check` (whether two arms' weighted points stand for the same posterior) and
:mod:`~pmcbandit.stats.missed_mass` (whether one arm's importance weights show another arm's estimate too low), and
:mod:`~pmcbandit.stats.dispersion` (a lower confidence bound for a variance that reads the data's kurtosis).

May import: NumPy, SciPy, numba and the helpers (``pmcbandit._validation``); nothing else of the
package, and never ArviZ (like ArviZ's own base layer, this one knows no InferenceData).
"""

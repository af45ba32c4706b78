"""The papers' estimator models (Neufeld et al., 2014): :mod:`models.pima`."""

"""Randomness enters pmcbandit once, as a :class:`numpy.random.Generator`.

Public entry points accept ``random_seed`` as an ``int``, a ``Generator`` or
``None`` and convert it here (as ``pymc.util.get_random_generator`` does);
everything below takes a ``Generator`` and components get their own streams with
:meth:`numpy.random.Generator.spawn`. The global ``np.random`` state is never
read or written.
"""

from __future__ import annotations

import numbers

import numpy as np


def check_seed(random_seed, door: str = "run") -> None:
    """Raise as :func:`get_random_generator` would for a bad ``random_seed``, without drawing from it."""
    if random_seed is None or isinstance(random_seed, np.random.Generator):
        return
    get_random_generator(random_seed, door)


def get_random_generator(random_seed, door: str = "run") -> np.random.Generator:
    """Return a Generator for ``random_seed`` (int >= 0, Generator or None).

    A Generator is used as given (its stream is consumed); legacy
    ``RandomState`` objects, floats and sequences are rejected with a
    ``TypeError`` naming the parameter.
    """
    if random_seed is None:
        return np.random.default_rng()
    if isinstance(random_seed, np.random.Generator):
        return random_seed
    if isinstance(random_seed, numbers.Integral) and not isinstance(random_seed, bool):
        if random_seed < 0:
            raise ValueError(
                f"The 'random_seed' parameter of {door} must be a non-negative int. "
                f"Got {random_seed!r} instead."
            )
        return np.random.default_rng(int(random_seed))
    raise TypeError(
        f"The 'random_seed' parameter of {door} must be an int, a numpy.random.Generator "
        f"or None. Got {random_seed!r} of type {type(random_seed).__name__} instead."
    )

"""Point PyTensor's C backend at the system OpenBLAS before PyTensor is imported.

A pip-installed PyTensor finds no BLAS it can link (NumPy's wheels ship a
symbol-renamed OpenBLAS), warns at import and falls back to slow loops. The
project's set-up installs Debian's ``libopenblas-dev``; this module adds
``blas__ldflags=-lopenblas`` to ``PYTENSOR_FLAGS`` when that library is present
and the user has not configured BLAS themselves. It must run before the first
``import pytensor`` (``pmcbandit/__init__.py`` imports it first).
"""

from __future__ import annotations

import ctypes.util
import os
import sys


def configure_pytensor_blas() -> str | None:
    """Set ``blas__ldflags`` for PyTensor if the user has not; return the flags used.

    Returns ``None`` when nothing was changed: the user already set the flag
    (environment or ``.pytensorrc``), or no OpenBLAS is installed (PyTensor
    then warns as usual, which is the honest outcome).
    """
    flags = os.environ.get("PYTENSOR_FLAGS", "")
    if "blas__ldflags" in flags or "blas.ldflags" in flags:
        return None
    rc = os.environ.get("PYTENSORRC", os.path.expanduser("~/.pytensorrc"))
    for path in rc.split(os.pathsep):
        try:
            with open(path, encoding="utf-8") as fh:
                if "ldflags" in fh.read():
                    return None
        except OSError:
            continue
    if ctypes.util.find_library("openblas") is None:
        return None
    ldflags = "-lopenblas"
    if "pytensor" in sys.modules:
        # Too late for the import-time check, but still fixes compiled graphs.
        import pytensor

        pytensor.config.blas__ldflags = ldflags
    else:
        os.environ["PYTENSOR_FLAGS"] = ",".join(
            f for f in (flags, f"blas__ldflags={ldflags}") if f
        )
    return ldflags

# Two commands do all the set-up on a fresh machine:
#   make demo   creates .venv, installs pmcbandit and runs the Pima evidence job
#   make test   creates .venv, installs pmcbandit[dev] and runs the default test suite
# and `make docs` builds the how-to guide, the notebooks and the API reference, executing every
# example and notebook in quick mode (a cell that raises, or any Sphinx warning, is an error).
#
# The newest supported Python on the machine (3.13, 3.12, 3.11; pyenv's installs included: tools/find-python)
# builds .venv; pip then picks PyMC 6 and ArviZ 1 on Python >= 3.12 and PyMC 5 and ArviZ 0.x on 3.11. Another
# interpreter or environment: `make test PYTHON=python3.11 VENV=.venv-311`; the oldest supported versions:
# `make test PYTHON=$$(tools/find-python 3.11) VENV=.venv-oldest CONSTRAINTS=.ci/oldest.txt` (as CI does).
PYTHON ?= $(shell tools/find-python || command -v python3)
VENV ?= .venv
CONSTRAINTS ?=
BIN := $(VENV)/bin
# The stamp names the interpreter, so a .venv made by another Python is made anew. Installing ends with
# `pmcbandit warm-up`, which fills numba's on-disk cache once, so that the first run (make demo) does not compile.
STAMP := $(VENV)/.installed-$(notdir $(PYTHON))
DOCS_STAMP := $(VENV)/.installed-docs
SAMPLERS_STAMP := $(VENV)/.installed-samplers
PYTEST_WORKERS ?= 2

.PHONY: install blas versions demo test test-slow test-all test-samplers lint notebooks bench docs clean clean-numba

# PyTensor links its C backend against a system BLAS; a pip install finds none and
# warns that it is "severely degraded". Debian's OpenBLAS fixes that, and
# pmcbandit/_compat.py points PyTensor at it.
blas:
	@if ldconfig -p 2>/dev/null | grep -q 'libopenblas\.so '; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "installing Debian OpenBLAS (libopenblas-dev) for PyTensor"; \
		(apt-get install -y -qq libopenblas-dev >/dev/null 2>&1 || \
		 (apt-get update -qq && apt-get install -y -qq libopenblas-dev >/dev/null)); \
	else echo "warning: install libopenblas-dev (Debian/Ubuntu) so PyTensor can use BLAS"; fi

$(STAMP): pyproject.toml
	@$(MAKE) --no-print-directory blas
	$(PYTHON) -m venv --clear $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]' $(if $(CONSTRAINTS),-c $(CONSTRAINTS))
	$(BIN)/pmcbandit warm-up
	@touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/pmcbandit evidence --out demo-output

# Which Python, PyMC, PyTensor and ArviZ the tests run on, printed first.
versions: $(STAMP)
	@$(BIN)/python -c "import sys, pymc, pytensor, arviz; print(f'Python {sys.version.split()[0]}, PyMC {pymc.__version__}, PyTensor {pytensor.__version__}, ArviZ {arviz.__version__}')"

test: versions
	$(BIN)/python -m pytest -m "not slow" -n $(PYTEST_WORKERS) -q

# ruff: pycodestyle, pyflakes, NumPy and numpydoc rules (pyproject.toml, [tool.ruff]).
lint: $(STAMP)
	$(BIN)/ruff check pmcbandit models benchmarks tests

test-slow: versions
	$(BIN)/python -m pytest -m slow -n $(PYTEST_WORKERS) -q

test-all: versions
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) -q

# The NUTS backends (nutpie, numpyro, blackjax: the samplers extra) on top of the dev install, and their
# tests, slow ones included; without the extra those tests skip with the missing package as reason.
$(SAMPLERS_STAMP): $(STAMP) pyproject.toml
	$(BIN)/pip install -q -e '.[samplers]'
	@touch $(SAMPLERS_STAMP)

test-samplers: $(SAMPLERS_STAMP)
	$(BIN)/python -m pytest tests/arms/samplers/test_backends.py tests/compare/test_convergence_flags.py \
		tests/test_compat.py -q

bench: $(STAMP)
	$(BIN)/python -m benchmarks.run_all

# The docs extra on top of the dev install, under a stamp of its own so that `make test` never
# installs Sphinx and `make docs` reinstalls only when pyproject.toml changes.
$(DOCS_STAMP): $(STAMP) pyproject.toml
	$(BIN)/pip install -q -e '.[docs]'
	@touch $(DOCS_STAMP)

docs: $(DOCS_STAMP)
	$(BIN)/python -m sphinx -W --keep-going -b html docs docs/_build/html

clean: clean-numba
	rm -rf $(VENV) demo-output .pytest_cache docs/_build docs/api/generated docs/notebooks

# numba's on-disk cache of compiled kernels (beside each module, in __pycache__) is checked against the
# caller's own source file only: a kernel that inlines one from another module keeps the old code after
# that module changes (the tests' and benchmarks' kernels inline the package's too).
clean-numba:
	find pmcbandit tests benchmarks -name '*.nbi' -delete -o -name '*.nbc' -delete

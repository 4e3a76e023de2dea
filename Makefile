# The book's entry points (see README.md):
#   make install     create .venv and install the pinned stack (and the package, editable)
#   make book        install, execute every chapter (ci and full scale), build the HTML book (all or nothing)
#   make test        install, lint (ruff check, ruff format --check), run the unit tests and every chapter under nbval
#   make lint        ruff check and ruff format --check over src/ and tests/
#   make check-site  build the book, then open every page in headless Chromium (needs the system's chromium)
#   make sweep       every chapter at full over SEEDS (0-2) on a LocalCluster (or SCHEDULER=tcp://host:8786), then
#                    seed 0 under a second kernel family; `make build` then shows the pooled, fragility-marked verdicts
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
JOBS   ?= 2
SEED   ?= 0
# make book refuses a partial or unclean book; `make build STRICT=` renders whatever has run
STRICT ?= --strict
# Two chapters run at a time on two cores: one BLAS/torch thread each.
export OMP_NUM_THREADS ?= 1
export MKL_NUM_THREADS ?= 1
export OPENBLAS_NUM_THREADS ?= 1
export PIP_DISABLE_PIP_VERSION_CHECK = 1
export PYDEVD_DISABLE_FILE_VALIDATION = 1

SEEDS  ?= 0-2
SCHEDULER ?=

.PHONY: book run build test lint install check-site clean sweep

$(VENV)/.installed: requirements.lock pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -r requirements.lock
	$(PY) -m pip install -q --no-deps -e .
	touch $@

install: $(VENV)/.installed

run: $(VENV)/.installed
	$(PY) -m icml26 run --scale ci --jobs $(JOBS) --seed $(SEED)
	$(PY) -m icml26 run --scale full --jobs $(JOBS) --seed $(SEED)

build: $(VENV)/.installed
	$(PY) -m icml26 build --scale full $(STRICT)

check-site: build
	$(PY) -m icml26 check-site

book: run build

# The pooled `full` book: seeds 0-2 of every chapter (a seed-0 `run` of the same key is reused, not re-executed),
# then seed 0 again under torch/MKL/oneDNN/OpenBLAS at AVX2, which measures how far rounding moves each decision.
sweep: $(VENV)/.installed
	$(PY) -m icml26 sweep --seeds $(SEEDS) --scale full --no-progress $(if $(SCHEDULER),--scheduler $(SCHEDULER))
	$(PY) -m icml26 sweep --seeds 0 --scale full --kernels avx2 --no-progress $(if $(SCHEDULER),--scheduler $(SCHEDULER))

lint: $(VENV)/.installed
	$(PY) -m ruff check --no-cache src tests
	$(PY) -m ruff format --check --no-cache src tests

# Three pytest workers on two cores: the longest test files wait on subprocesses (kernels, Dask
# workers), which left a core idle with two (169-181 % CPU measured; 192 % with three, the same wall time).
test: lint
	$(PY) -m icml26 sync
	$(PY) -m pytest -n 3 --dist loadfile --nbval-lax --nbval-current-env -p no:cacheprovider tests _build/ipynb

clean:
	rm -rf _build

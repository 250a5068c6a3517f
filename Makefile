# cudalab: `make report` builds the lab report, `make test` runs the tests (each sets up .venv first).
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PROFILE ?= gtx680
# CuPy comes along where a GPU is present; replay and tests need none.
# (and dask-cuda, for build_report.py --workers on GPUs).
EXTRAS := test$(shell command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 && echo ,gpu,dask-gpu)

.PHONY: help venv report check-recordings lint test test-full test-gpu lab wheelhouse stamp gpu-check benchmarks bench clean

help:
	@echo "make report     set up .venv and build the report (PROFILE=$(PROFILE)): build/report-$(PROFILE)/report.html"
	@echo "make test       set up .venv, lint (ruff check, ruff format --check) and run the test suite"
	@echo "                but the tests marked full (GPU tests skip without a GPU); about 6 minutes on 2 cores"
	@echo "make test-full  make test, then the tests marked full: Dask clusters, the browser, the"
	@echo "                second architecture, a second profile (what CI runs)"
	@echo "make lint       only the linter and the formatter's check (ruff format $(LINTED) fixes the layout)"
	@echo "                (on every core; PYTEST_WORKERS=0 PYTEST_ARGS=--kernel-resources adds the table of every kernel's registers and spills)"
	@echo "make lab        open the notebooks in JupyterLab (installed once; as root: --allow-root --no-browser)"
	@echo "make wheelhouse download the wheels an offline GPU node needs (wheelhouse/) and stamp the source"
	@echo "make stamp      write wheelhouse/source-stamp.json (commit + tree fingerprint) before the tree travels"
	@echo "make gpu-check  on a GPU node: measured reports for h100 and gtx680, recorded for replay, + tests"
	@echo "make check-recordings  list recordings older than the kernels, notebooks or package modules"
	@echo "                that decide their data (exit 1 if any): run before committing such a change"
	@echo "make benchmarks rewrite BENCHMARKS.md from the recorded summaries in results/"
	@echo "make bench      time the cold, cached and replayed builds of PROFILE=h100 (BENCH_ARGS=--record keeps them)"
	@echo "make mutants    mutation testing of the modules that decide a verdict (minutes; docs/mutation-testing.md)"

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[$(EXTRAS)]'
	touch $@

venv: $(VENV)/.installed

report: venv
	$(PY) build_report.py --gpu $(PROFILE)

# The linter and the formatter first (seconds): the tree must pass both, as CI checks.
LINTED := cudalab tools tests notebooks build_report.py

lint: venv
	$(VENV)/bin/ruff check $(LINTED)
	$(VENV)/bin/ruff format --check $(LINTED)

# The suite on every core (pytest-xdist; PYTEST_WORKERS=0 runs it in one process), work stolen
# between workers so the slow report builds spread out.
PYTEST_WORKERS ?= auto

# make test leaves out the tests marked `full` (pyproject.toml): each is a heavier instance of a path
# the rest covers already (a Dask cluster, Chromium driving JupyterLab or printing every handout,
# the second compile architecture, a second profile's whole replay), about half the suite's CPU.
# make test-full runs them after make test's, the two runs sharing one replay cache
# (report/replay_cache.py); CI (.ci/run) runs make test-full.
PYTEST := $(PY) -m pytest -q -n $(PYTEST_WORKERS) --dist worksteal

test: lint
	$(PYTEST) -m "not full" $(PYTEST_ARGS)

test-full: lint
	cache=$$(mktemp -d -t cudalab-replay-cache-XXXXXX) && trap 'rm -rf "$$cache"' EXIT && \
	CUDALAB_REPLAY_CACHE=$$cache $(PYTEST) -m "not full" $(PYTEST_ARGS) && \
	CUDALAB_REPLAY_CACHE=$$cache $(PYTEST) -m full $(PYTEST_ARGS)

test-gpu: venv
	$(PY) -m pytest -m gpu

# JupyterLab is installed once (re-installed only when pyproject.toml changes); as root (a
# container) it needs --allow-root and has no browser to open. LAB_ARGS adds options, e.g.
# LAB_ARGS="--ip=0.0.0.0 --port=8888" to reach it from outside a container.
LAB_ARGS ?=
ROOT_ARGS := $(shell [ "$$(id -u)" = 0 ] && echo --allow-root --no-browser)

$(VENV)/.lab-installed: $(VENV)/.installed pyproject.toml
	$(PY) -m pip install --quiet -e '.[$(EXTRAS),lab]'
	touch $@

lab: $(VENV)/.lab-installed
	$(VENV)/bin/jupyter lab --notebook-dir=notebooks $(ROOT_ARGS) $(LAB_ARGS)

wheelhouse:
	tools/build_wheelhouse.sh wheelhouse 3.12
	$(MAKE) stamp

# The commit and tree fingerprint that recordings made on a GPU node without .git will name.
stamp:
	$(PYTHON) tools/stamp_source.py wheelhouse/source-stamp.json

gpu-check:
	tools/gpu_check.sh --record

bench: venv
	$(PY) tools/bench_build.py --profile $(if $(filter command line,$(origin PROFILE)),$(PROFILE),h100) $(BENCH_ARGS)

check-recordings: venv
	$(PY) tools/check_recordings.py

benchmarks: venv
	$(PY) tools/write_benchmarks.py > BENCHMARKS.md

clean:
	rm -rf build

# Mutation testing of the modules that decide a verdict (outside CI and `make test`): mutmut mutates
# them in a copy (mutants/, ignored by git) and runs, for each mutant, the fast CPU tests that reach
# it (pyproject.toml's [tool.mutmut]); then one line per module: mutants killed (a timeout counts as
# killed) of those run, and every survivor. Of grade.py, only the ranking. MUTANTS runs a part
# (make mutants MUTANTS='cudalab.core.check.*'); mutmut keeps its results in mutants/ and runs again
# only what changed (rm -rf mutants for a fresh run). docs/mutation-testing.md: scores and survivors.
MUTANTS ?= cudalab.core.check.* cudalab.grading.submission.* cudalab.grading.directives.* cudalab.grading.results.* \
	cudalab.grading.isolate.* cudalab.grading.grade.x_scoreboard__* cudalab.grading.grade.x_fully_correct__*
MUTANT_WORKERS ?= $(shell nproc 2>/dev/null || echo 2)

.PHONY: mutants

$(VENV)/.mutants-installed: $(VENV)/.installed pyproject.toml
	$(PY) -m pip install --quiet -e '.[$(EXTRAS),mutants]'
	touch $@

mutants: $(VENV)/.mutants-installed
	$(VENV)/bin/mutmut run --max-children $(MUTANT_WORKERS) $(foreach m,$(MUTANTS),'$(m)')
	@$(VENV)/bin/mutmut results --all true | awk -F': ' 'NF == 2 && $$2 != "not checked" { \
		m = $$1; sub(/^ +/, "", m); sub(/\.x[^.]*$$/, "", m); n[m]++; if ($$2 == "killed" || $$2 == "timeout") k[m]++ } \
		END { for (m in n) printf "%-28s %4d of %4d killed (%.1f%%)\n", m, k[m], n[m], 100 * k[m] / n[m] }' | sort
	@$(VENV)/bin/mutmut results | grep -v -e ': not checked' -e ': timeout' || echo "no survivor"
	$(PY) tools/mutation_scores.py --record

# cudalab: `make report` builds the lab report, `make test` runs the tests (each sets up .venv first).
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PROFILE ?= gtx680
# CuPy comes along where a GPU is present; replay and tests need none.
EXTRAS := test$(shell command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 && echo ,gpu)

.PHONY: help venv report test test-gpu lab wheelhouse stamp gpu-check benchmarks clean

help:
	@echo "make report     set up .venv and build the report (PROFILE=$(PROFILE)): build/report-$(PROFILE)/report.html"
	@echo "make test       set up .venv and run the test suite (GPU tests skip without a GPU)"
	@echo "                (PYTEST_ARGS=--kernel-resources adds the table of every kernel's registers and spills)"
	@echo "make lab        open the notebooks in JupyterLab"
	@echo "make wheelhouse download the wheels an offline GPU node needs (wheelhouse/) and stamp the source"
	@echo "make stamp      write wheelhouse/source-stamp.json (commit + tree fingerprint) before the tree travels"
	@echo "make gpu-check  on a GPU node: measured reports for h100 and gtx680, recorded for replay, + tests"
	@echo "make benchmarks rewrite BENCHMARKS.md from the recorded summaries in results/"

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[$(EXTRAS)]'
	touch $@

venv: $(VENV)/.installed

report: venv
	$(PY) build_report.py --gpu $(PROFILE)

test: venv
	$(PY) -m pytest -q $(PYTEST_ARGS)

test-gpu: venv
	$(PY) -m pytest -m gpu

lab: venv
	$(PY) -m pip install --quiet -e '.[$(EXTRAS),lab]'
	$(VENV)/bin/jupyter lab notebooks/

wheelhouse:
	tools/build_wheelhouse.sh wheelhouse 3.12
	$(MAKE) stamp

# The commit and tree fingerprint that recordings made on a GPU node without .git will name.
stamp:
	$(PYTHON) tools/stamp_source.py wheelhouse/source-stamp.json

gpu-check:
	tools/gpu_check.sh --record

benchmarks: venv
	$(PY) tools/write_benchmarks.py > BENCHMARKS.md

clean:
	rm -rf build

# Every target creates .venv and installs what it needs, so each works as the first command on a
# fresh clone. The stamp files re-install when pyproject.toml changes.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PY := $(BIN)/python
PIP := $(PY) -m pip --disable-pip-version-check --quiet
# Two cores: the test suite runs on both.
PYTEST_WORKERS ?= 2

.PHONY: demo test wheel-smoke bench docs lint typecheck clean fuzz props harmony-model

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --upgrade pip setuptools wheel

$(VENV)/.core: pyproject.toml | $(PY)
	$(PIP) install -e .
	@touch $@

# The rl extra too: the Harmony tests train small JAX models in a Gymnasium environment.
$(VENV)/.test: pyproject.toml | $(PY)
	$(PIP) install -e '.[test,rl]'
	@touch $@

$(VENV)/.docs: pyproject.toml | $(PY)
	$(PIP) install -e '.[docs]'
	@touch $@

$(VENV)/.bench: pyproject.toml | $(PY)
	$(PIP) install -e '.[bench]'
	@touch $@

$(VENV)/.lint: pyproject.toml | $(PY)
	$(PIP) install -e '.[lint,test]'
	@touch $@

demo: $(VENV)/.core
	$(BIN)/optsched demo

# The suite runs against the editable install; the wheel smoke then builds the wheel, installs it
# in a throwaway environment and runs the demo and every family from outside the tree (about a
# minute), so that what users install is what was tested.
test: $(VENV)/.test
	$(PY) -W error -c "import optsched"
	$(PY) -m pytest -n $(PYTEST_WORKERS) -p no:cacheprovider
	$(PY) scripts/wheel_smoke.py

wheel-smoke: $(VENV)/.test
	$(PY) scripts/wheel_smoke.py

# Results go to an ignored directory so that a run leaves the working tree clean; pass
# BENCH_OUT=benchmarks/results to refresh the committed reference tables.
BENCH_OUT ?= benchmarks/results/latest
bench: $(VENV)/.bench
	$(PY) benchmarks/run.py --out $(BENCH_OUT)

# Rebuild the shipped Harmony policy (optsched/harmony/data/harmony_small.npz): seeded, on the
# CPU, bit-identical run after run on one machine (the digest it prints is the shipped one's).
harmony-model: $(VENV)/.test
	$(BIN)/optsched harmony train --seed 0 --iterations 200 --episodes 8 --jobs 16 \
		-o optsched/harmony/data/harmony_small.npz

# Warnings are errors; the check after the build fails if any page would load a script,
# stylesheet, font or image from outside the build (the docs must read the same offline).
docs: $(VENV)/.docs
	$(BIN)/sphinx-build -W --keep-going -b html docs docs/_build/html
	$(PY) docs/check_offline.py docs/_build/html
	$(PY) docs/check_figures.py docs docs/_build/html

lint: $(VENV)/.lint
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

clean:
	rm -rf $(VENV) docs/_build .pytest_cache .mypy_cache .ruff_cache .hypothesis fuzz-out

# A longer fuzz campaign of the command line (outcome table, failing cases in fuzz-out/).
FUZZ_MUTANTS ?= 30
FUZZ_JOBS ?= 2
FUZZ_ARGS ?=
fuzz: $(VENV)/.test
	$(PY) scripts/fuzz.py --mutants $(FUZZ_MUTANTS) --jobs $(FUZZ_JOBS) --options --experiments --checkpoints --out fuzz-out $(FUZZ_ARGS)
	$(PY) scripts/hardening_cases.py --out fuzz-out

# A search for counterexamples before a user finds one: every property test (Hypothesis marks
# its own tests), fresh random examples on every run, PROPS_FACTOR times each test's own number
# of examples, at most PROPS_MAX_EXAMPLES per test (the "props" profile of tests/conftest.py).
# Hours at the defaults on two cores; e.g. PROPS_FACTOR=3 PROPS_ARGS="tests/test_sim_las_fast.py"
# for a shorter run. A failure prints its example and a blob to reproduce it, and stays in
# .hypothesis/ so that the next run tries it first.
PROPS_FACTOR ?= 10
PROPS_MAX_EXAMPLES ?= 600
PROPS_ARGS ?=
props: $(VENV)/.test
	HYPOTHESIS_PROFILE=props PROPS_FACTOR=$(PROPS_FACTOR) PROPS_MAX_EXAMPLES=$(PROPS_MAX_EXAMPLES) \
		$(PY) -m pytest -n $(PYTEST_WORKERS) -p no:cacheprovider -m hypothesis -q $(PROPS_ARGS)

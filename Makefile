# Composer: `make run` starts the console, `make test` runs the whole suite.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.PHONY: run test fuzz lint format bench clean kube-tier

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(PY) -m composer.launcher

test: $(STAMP)
	$(PY) -m pytest $(PYTEST_ARGS)

# schemathesis against every API operation, as an operator and as a tenant member, on Daphne
# and DATABASE_URL's server (tests/fuzz/api.py; FUZZ_MAX_EXAMPLES, FUZZ_SEED to widen it).
fuzz: $(STAMP)
	$(PY) -m tests.fuzz.api

# The Kubernetes controller's real API server tier (apiextensions-apiserver and etcd from
# Debian sid, built as root into ~/.cache/composer/kube-tier); `make test` runs it when built.
kube-tier:
	.ci/kube-tier

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(PY) manage.py makemigrations --check --dry-run

format: $(STAMP)
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

bench: $(STAMP)
	$(PY) bench/run.py

clean:
	rm -rf $(VENV) var staticfiles .pytest_cache .ruff_cache .mypy_cache

# Two commands on a fresh machine, each setting itself up on first use:
#   make run    the built-in default bench (Odin off Horten), until Ctrl-C
#   make test   lint, type check and the test suite (what CI runs)
# Both create .venv and install hild into it when it is missing or pyproject.toml changed.
# ARGS passes arguments on: make run ARGS="example --time-scale 5", make test ARGS="-k mirror".

PYTHON ?= python3
VENV := .venv
STAMP := $(VENV)/.installed

.PHONY: run test

run: $(STAMP)
	$(VENV)/bin/hild run $(ARGS)

test: $(STAMP)
	$(VENV)/bin/ruff check hild tests bench
	$(VENV)/bin/ruff format --check hild tests bench
	$(VENV)/bin/mypy
	$(VENV)/bin/python -m pytest $(ARGS)

# (setuptools warns of every editable install whose packages are mapped, as hild.builtin's data
# packages are, that a folder named like the package could shadow it: not news here, so hidden)
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --upgrade pip
	PYTHONWARNINGS=ignore::UserWarning $(VENV)/bin/python -m pip install --quiet -e ".[test]"
	$(VENV)/bin/hild warm  # the default bench's kernels compiled now: the first run starts at once
	touch $(STAMP)

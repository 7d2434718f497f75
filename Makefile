# make demo: set up .venv and evaluate ragtune on its own documentation.
# make test: set up .venv with every extra and run the whole test suite.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test install clean bench-scifact

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install -q -e '.[test,embed,st,ann]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(PY) -m ragtune golden check --corpus docs --golden docs/golden.jsonl
	$(PY) -m ragtune eval --corpus docs --golden docs/golden.jsonl --json out/demo-eval.json

test: $(STAMP)
	$(PY) -m pytest -q

bench-scifact: $(STAMP)
	$(PY) bench/beir.py --data ../shared/datasets/scifact --split test

clean:
	rm -rf $(VENV) out .pytest_cache

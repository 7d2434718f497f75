# make demo: set up .venv with ragtune[tour] (every extra the README's tour uses; no torch) and evaluate ragtune on its
# own documentation (offline; the default hybrid retrieval).
# make test: set up .venv with every extra and run the whole test suite.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
CORE := $(VENV)/.installed-core
DEMO := $(VENV)/.installed-demo
ALL := $(VENV)/.installed-all
# the extras make demo installs: tests/test_tour_install.py runs the README's tour with only these
DEMO_EXTRAS := tour

.PHONY: demo test install install-all clean constraints bench-scifact bench-chunking

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

$(CORE): pyproject.toml constraints.txt | $(PY)
	$(PY) -m pip install -q -c constraints.txt -e .
	touch $(CORE)

$(DEMO): pyproject.toml constraints.txt | $(PY)
	$(PY) -m pip install -q -c constraints.txt -e '.[$(DEMO_EXTRAS)]'
	touch $(DEMO) $(CORE)

$(ALL): pyproject.toml constraints.txt examples/plugin/pyproject.toml examples/plugin/ragtune_example_overlap.py | $(PY)
	$(PY) -m pip install -q -c constraints.txt -e '.[test,embed,st,onnx,train,ann,llm,serve,external,llamaindex,langchain,haystack,traces,milvus,milvus-server,ray,formats,mlflow,search]'
	$(PY) -m pip install -q -c constraints.txt ./examples/plugin  # the entry-point example the registry tests load
	touch $(ALL) $(DEMO) $(CORE)

install: $(CORE)
install-all: $(ALL)

demo: $(DEMO)
	$(PY) -m ragtune golden check --corpus docs --golden docs/golden.jsonl
	$(PY) -m ragtune eval --corpus docs --golden docs/golden.jsonl --out out/demo-eval.json
	rm -rf out/demo-sweep
	$(PY) -m ragtune sweep --corpus docs --golden docs/golden.jsonl --grid examples/demo-grid.toml --out out/demo-sweep --top 10

test: $(ALL)
	$(PY) -m pytest -q -n auto --dist loadgroup --no-loadscope-reorder --durations=25

bench-scifact: $(ALL)
	$(PY) bench/beir.py --data ../shared/datasets/scifact --split test --retriever bm25,dense,hybrid

bench-chunking: $(CORE)
	$(PY) bench/chunking.py --corpus ../shared/datasets/fastapi_docs/md/docs/en/docs --golden bench/golden/fastapi.jsonl

constraints: $(ALL)
	(sed -n 1,3p constraints.txt; $(PY) -m pip freeze --exclude-editable | grep -v '^ragtune') > constraints.new && mv constraints.new constraints.txt

clean:
	rm -rf $(VENV) out .pytest_cache .ragtune-cache

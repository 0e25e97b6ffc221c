VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test test-all bench screenshot clean

$(PY):
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(STAMP): $(PY) pyproject.toml
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

run: $(STAMP)
	$(PY) -m npu_studio resources/examples/single_conv.onnx

test: $(STAMP)
	QT_QPA_PLATFORM=offscreen $(PY) -m pytest -q

test-all: $(STAMP)
	QT_QPA_PLATFORM=offscreen $(PY) -m pytest -q -m ''

bench: $(STAMP)
	$(PY) benchmarks/run_all.py

clean:
	rm -rf $(VENV) build *.egg-info

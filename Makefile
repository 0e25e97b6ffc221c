VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test test-fast bench screenshot clean

$(PY):
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(STAMP): $(PY) pyproject.toml
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

run: $(STAMP)
	$(PY) -m npu_studio resources/examples/single_conv.onnx

# Every test, the model-zoo runs included, on both cores.
test: $(STAMP)
	QT_QPA_PLATFORM=offscreen $(PY) -m pytest -q -n 2 --durations=15

# The same without the zoo-wide runs marked slow (about 1.5 minutes).
test-fast: $(STAMP)
	QT_QPA_PLATFORM=offscreen $(PY) -m pytest -q -n 2 -m "not slow"

screenshot: $(STAMP)
	QT_QPA_PLATFORM=xcb xvfb-run -a -s "-screen 0 1600x1000x24" $(PY) docs/screenshots/take_screenshot.py

bench: $(STAMP)
	$(PY) benchmarks/run_all.py

clean:
	rm -rf $(VENV) build *.egg-info

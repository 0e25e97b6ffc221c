VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

LOCK := requirements/venv.lock

.PHONY: run test test-fast test-ui-x11 fuzz fuzz-models bench screenshot clean install-desktop uninstall-desktop bundle lock

$(PY):
	python3 -m venv $(VENV)

# The exact versions in the lock, each checked against its hash, then the project itself on top
# (no dependency resolution, no build isolation: setuptools comes from the lock too).
$(STAMP): $(PY) pyproject.toml $(LOCK) tests/backends/toy_npu/pyproject.toml
	$(PY) -m pip install --quiet --require-hashes --only-binary :all: -r $(LOCK)
	$(PY) -m pip install --quiet --no-deps --no-build-isolation -e .
	# the tests' second NPU backend (docs/npu-backends.md), found through its entry point
	$(PY) -m pip install --quiet --no-deps --no-build-isolation -e tests/backends/toy_npu
	touch $(STAMP)

# Refresh the lock to the newest releases pyproject.toml allows (pip-tools in a venv of its own).
LOCK_VENV := build/lock-venv
lock:
	python3 -m venv $(LOCK_VENV)
	$(LOCK_VENV)/bin/python -m pip install --quiet 'pip-tools>=7.4,<8'
	CUSTOM_COMPILE_COMMAND="make lock" $(LOCK_VENV)/bin/pip-compile --quiet --upgrade \
		--index-url https://pypi.org/simple --no-emit-index-url --no-emit-find-links \
		--extra test --all-build-deps --allow-unsafe --generate-hashes --strip-extras \
		-o $(LOCK) pyproject.toml

run: $(STAMP)
	$(PY) -m npu_studio resources/examples/single_conv.onnx

# Every test, the model-zoo runs included, on both cores.
test: $(STAMP)
	QT_QPA_PLATFORM=offscreen $(PY) -m pytest -q -n 2 --durations=15 -m "not corpus"

# The UI tests once more in a real X window (Xvfb, Qt's xcb platform), as users run the app; one
# process, since windows of two test processes on one X server would take each other's keyboard focus.
test-ui-x11: $(STAMP)
	QT_QPA_PLATFORM=xcb xvfb-run -a -s "-screen 0 1600x1000x24" $(PY) -m pytest -q -p no:xdist -m "not slow" tests/ui

# The same without the zoo-wide runs marked slow (about 1.5 minutes).
test-fast: $(STAMP)
	QT_QPA_PLATFORM=offscreen $(PY) -m pytest -q -n 2 -m "not slow and not corpus"

# The readers' property tests (tests/core/test_reader_properties.py) with many more examples than
# `make test` runs and a fresh random seed: several minutes. Hypothesis prints the case counts.
# Then 3,000 random mutations of an npu_program.npub through the plugin's C interpreter built with
# ASan/UBSan (tests/core/npu/hal/test_exec_mutations.py; `make test` runs 40): about 3 minutes.
# Then every workspace artifact damaged every way and reopened (`make test`: each artifact once).
fuzz: $(STAMP)
	NPU_STUDIO_FUZZ_PROFILE=fuzz QT_QPA_PLATFORM=offscreen $(PY) -m pytest -q -p no:cacheprovider \
		tests/core/test_reader_properties.py tests/core/test_sweep_reader_properties.py --hypothesis-show-statistics
	NPU_STUDIO_FUZZ_PROFILE=fuzz $(PY) -m pytest -q -p no:cacheprovider -s \
		tests/core/npu/hal/test_exec_mutations.py -k random_mutations
	NPU_STUDIO_FUZZ_PROFILE=fuzz QT_QPA_PLATFORM=offscreen $(PY) -m pytest -q -p no:cacheprovider \
		tests/ui/test_restore_any_workspace.py

# The differential corpus (tests/models/): first the saved regressions and extra seeds make test
# leaves out (the `corpus` mark, with the slowest zoo runs), then FUZZ_MODELS random ONNX models from a fresh seed, each
# compiled and checked against onnxruntime and IREE (run, simulate --check, run --npu, trace on the
# clean build, trace of each dispatch perturbed alone). Prints models per minute, false alarms and
# the localization rate; every failing model is saved to tests/models/regressions/.
FUZZ_MODELS ?= 200
fuzz-models: $(STAMP)
	QT_QPA_PLATFORM=offscreen $(PY) -m pytest -q -n 2 -m corpus tests
	QT_QPA_PLATFORM=offscreen $(PY) -m tests.models.fuzz_models --count $(FUZZ_MODELS)

# The README's screenshots: resnet50 from the ONNX light zoo, every dock open, at 1600x1000 and 1280x800.
screenshot: $(STAMP)
	QT_QPA_PLATFORM=xcb xvfb-run -a -s "-screen 0 1600x1000x24" $(PY) docs/screenshots/take_screenshot.py

bench: $(STAMP)
	$(PY) benchmarks/run_all.py

# Desktop entry, MIME types, metainfo and icons for the current user (~/.local/share);
# LAUNCHER=dist/npu-studio/npu-studio installs the bundle's instead of the venv's.
LAUNCHER ?= $(abspath $(VENV))/bin/npu-studio
install-desktop: $(STAMP)
	$(PY) packaging/linux/install_desktop.py --launcher $(LAUNCHER)

uninstall-desktop:
	python3 packaging/linux/install_desktop.py --uninstall

# One-folder bundle in dist/npu-studio/ (PyInstaller, installed here: not a test dependency),
# then its own launcher runs the self-test.
bundle: $(STAMP)
	$(PY) -m pip install --quiet 'pyinstaller>=6.10,<7'
	$(PY) -m PyInstaller --noconfirm --log-level WARN --distpath dist \
		--workpath build/pyinstaller packaging/pyinstaller/npu-studio.spec
	dist/npu-studio/npu-studio --self-test

clean:
	rm -rf $(VENV) build dist *.egg-info

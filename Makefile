# One place for set-up and checks; README.rst names `make tutorial` and `make test`.
# Everything goes into ./.venv, built from this repository's own files and PyPI, and ./node_modules
# (Azurite, the blob endpoint of the local service), from package-lock.json and the npm registry.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
HOROVOD_BUILD_ENV := HOROVOD_WITH_TENSORFLOW=1 HOROVOD_WITH_GLOO=1 HOROVOD_WITHOUT_MPI=1 \
                     HOROVOD_WITHOUT_PYTORCH=1 HOROVOD_WITHOUT_MXNET=1

.PHONY: install client-venvs chroot-tools browser-tools python313 tutorial test docs benchmarks clean

# The stamp makes repeated runs cheap; it is rebuilt whenever setup.py or this file changes.
$(VENV)/.installed: setup.py Makefile
	$(PYTHON) -m venv $(VENV)
	# setuptools < 81: TensorBoard 2.15 imports pkg_resources, which 81 removed.
	$(PY) -m pip install --quiet --upgrade "pip>=23" "setuptools>=68,<81" wheel
	# TensorFlow first: horovod compiles against it (see the pins in setup.py).
	$(PY) -m pip install --quiet -e ".[training,test,docs,azureml,notebook,aio,mlflow]" "cmake>=3.13,<4"
	# --no-build-isolation lets horovod's build see the installed TensorFlow; cmake 4 breaks gloo.
	$(HOROVOD_BUILD_ENV) $(PY) -m pip install --quiet --no-build-isolation --no-cache-dir \
	    horovod==0.28.1
	$(PY) -c "import horovod.tensorflow.keras as hvd; hvd.init(); print('horovod', hvd.size(), 'process ready')"
	touch $@

# Azurite, exactly as package-lock.json pins it, into ./node_modules (never globally). Without
# Node.js only the local service's blob storage is unavailable, so this step then says how to get it
# and does not fail; the stamp is left out, so the next `make install` tries again.
node_modules/.installed: package.json package-lock.json
	@if command -v npm >/dev/null 2>&1 && command -v node >/dev/null 2>&1; then \
	    npm ci --no-audit --no-fund && touch $@; \
	else \
	    echo "Node.js 20+ and npm were not found: the local service will run without blob storage."; \
	    echo "Install them (e.g. 'apt-get install nodejs npm', or from nodejs.org) and run 'make install' again."; \
	fi

install: $(VENV)/.installed node_modules/.installed

tutorial: install
	$(PY) examples/tutorial.py

# Clients the tests drive that must not share ./.venv -- the Azure CLI, and the SDK under the lowest
# and highest release of each Azure library setup.py allows -- each in its own virtualenv from PyPI,
# built once and kept under ~/.cache/horovod-batchai/client-venvs (see tests/client_venvs.py).
client-venvs: install
	$(PY) tests/client_venvs.py

# The SDK is also tested on Python 3.13, in a Debian trixie chroot (tests/python313/trixie.py) built
# with debootstrap from Debian's packages and kept under ~/.cache/horovod-batchai/chroots. Both need
# root; without it they say so, and the Python 3.13 test is skipped with the reason.
chroot-tools:
	@if command -v debootstrap >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap; \
	else \
	    echo "debootstrap is missing and cannot be installed here (needs root and apt-get):"; \
	    echo "the Python 3.13 test (tests/python313) will be skipped."; \
	fi

# Chromium (Debian's package) for the test that looks at MLflow's UI in a real headless browser
# (tests/local/tracking/test_mlflow_ui_browser.py); it needs root and apt-get, and without them the
# test is skipped, except in CI (CI=true), where it fails.
browser-tools:
	@if command -v chromium >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; \
	else \
	    echo "chromium is missing and cannot be installed here (needs root and apt-get):"; \
	    echo "the MLflow UI browser test will be skipped (and fail in CI)."; \
	fi

python313: install chroot-tools
	$(PY) tests/python313/trixie.py

# Two parts: every test that can share the machine, on every core at once (pytest-xdist; tests are
# independent: each has its own state directory, ports and daemons); then, alone, the few marked
# `serial`, which measure how fast something reacts or load every core themselves. The client
# virtualenvs and the 3.13 chroot build in the background meanwhile (mostly downloads and unpacking),
# into .test-builds.log: the tests that use them start after the long ones (tests/conftest.py), wait
# for a build still under way (each holds a lock), or build it themselves if it failed. Tests are
# handed out one at a time (--maxschedchunk 1), the long ones first, so the workers end together.
TEST_WORKERS ?= auto
test: install chroot-tools browser-tools
	($(PY) tests/client_venvs.py && $(PY) tests/python313/trixie.py) >.test-builds.log 2>&1 & builds=$$!; \
	$(PY) -m pytest -q -n $(TEST_WORKERS) --maxschedchunk 1 -m "not serial"; parallel=$$?; \
	wait $$builds || { echo "== building the test clients failed:"; cat .test-builds.log; }; \
	$(PY) -m pytest -q -m serial; serial=$$?; \
	test $$parallel -eq 0 && test $$serial -eq 0

docs: install
	$(PY) -m sphinx -W -b html docs docs/_build/html

# Every benchmark's figures, then the two speed ratios the project tracks, gathered from their output.
benchmarks: SHELL := /bin/bash
benchmarks: install
	@rm -f .benchmarks.log
	for b in benchmarks/bench_*.py; do echo "== $$b"; $(PY) $$b 2>&1 | tee -a .benchmarks.log; \
	    test $${PIPESTATUS[0]} -eq 0 || exit 1; done
	@echo "== ratios"; grep -E "^(management|data) plane" .benchmarks.log; rm -f .benchmarks.log

clean:
	rm -rf $(VENV) docs/_build node_modules

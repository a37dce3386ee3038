# One place for set-up and checks; README.rst names `make tutorial` and `make test`.
# Everything goes into ./.venv, built from this repository's own files and PyPI.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
HOROVOD_BUILD_ENV := HOROVOD_WITH_TENSORFLOW=1 HOROVOD_WITH_GLOO=1 HOROVOD_WITHOUT_MPI=1 \
                     HOROVOD_WITHOUT_PYTORCH=1 HOROVOD_WITHOUT_MXNET=1

.PHONY: install tutorial test docs benchmarks clean

# The stamp makes repeated runs cheap; it is rebuilt whenever setup.py or this file changes.
$(VENV)/.installed: setup.py Makefile
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade "pip>=23" "setuptools>=68" wheel
	# TensorFlow first: horovod compiles against it (see the pins in setup.py).
	$(PY) -m pip install --quiet -e ".[training,test,docs]" "cmake>=3.13,<4"
	# --no-build-isolation lets horovod's build see the installed TensorFlow; cmake 4 breaks gloo.
	$(HOROVOD_BUILD_ENV) $(PY) -m pip install --quiet --no-build-isolation --no-cache-dir \
	    horovod==0.28.1
	$(PY) -c "import horovod.tensorflow.keras as hvd; hvd.init(); print('horovod', hvd.size(), 'process ready')"
	touch $@

install: $(VENV)/.installed

tutorial: install
	$(PY) examples/tutorial.py

test: install
	$(PY) -m pytest -q

docs: install
	$(PY) -m sphinx -W -b html docs docs/_build/html

benchmarks: install
	for b in benchmarks/bench_*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

clean:
	rm -rf $(VENV) docs/_build

"""Here so that the helpers beside it (raw_arm.py, jobs_support.py, ...) are importable from the
tests below it. (The conformance figures test_conformance.py gathers are printed by
tests/conftest.py, which also collects them from pytest-xdist's workers.)"""

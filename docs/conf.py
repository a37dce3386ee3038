"""Sphinx configuration: `make docs` builds docs/_build/html."""
import os
import sys

sys.path.insert(0, os.path.abspath(".."))

project = "horovod-batchai"
author = "horovod-batchai maintainers"
release = "0.1.0"

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
    "sphinx.ext.doctest",
]
autodoc_typehints = "description"
autodoc_member_order = "bysource"
# TensorFlow and Horovod are heavy and optional for reading the API: document without importing them.
autodoc_mock_imports = ["tensorflow", "horovod", "keras"]
nitpicky = False
exclude_patterns = ["_build"]
html_theme = "alabaster"

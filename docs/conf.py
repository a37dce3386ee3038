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
# Types only for what a docstring documents as :param:/:returns:, so that keyword-only arguments, documented as
# :keyword:, are not listed a second time, without text, under "Parameters".
autodoc_typehints_description_target = "documented"
autodoc_member_order = "bysource"
# TensorFlow and Horovod are heavy and optional for reading the API: document without importing them.
autodoc_mock_imports = ["tensorflow", "horovod", "keras"]
nitpicky = False
exclude_patterns = ["_build"]
html_theme = "alabaster"

"""Fixtures of the tracking tests (tracking_support.py)."""
from tracking_support import tracked  # noqa: F401 -- the fixture, for every test here

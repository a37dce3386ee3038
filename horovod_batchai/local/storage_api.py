"""(being written) Route table for this part of the management plane."""
from __future__ import annotations

from .routing import Route

ROUTES: list[Route] = []

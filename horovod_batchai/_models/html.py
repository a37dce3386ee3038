"""HTML tables for Jupyter: what ``_repr_html_`` of a status returns.

Every cell is escaped: names, messages and errors come from the service and may hold ``<``.
"""
from __future__ import annotations

import html
from typing import Sequence

__all__ = ["html_table"]


def html_table(headers: Sequence[str], rows: Sequence[Sequence[str]], *, numeric: frozenset[int] = frozenset()
               ) -> str:
    """One ``<table>``; columns whose index is in ``numeric`` are right-aligned, as in the text view.

    >>> html_table(["Name", "Idle"], [["a<b", "2"]], numeric=frozenset({1}))
    '<table><thead><tr><th style="text-align:left">Name</th><th style="text-align:right">Idle</th></tr></thead><tbody><tr><td style="text-align:left">a&lt;b</td><td style="text-align:right">2</td></tr></tbody></table>'
    """
    def cells(tag: str, values: Sequence[str]) -> str:
        return "".join(f'<{tag} style="text-align:{"right" if i in numeric else "left"}">{html.escape(v)}</{tag}>'
                       for i, v in enumerate(values))

    body = "".join(f"<tr>{cells('td', row)}</tr>" for row in rows)
    return f"<table><thead><tr>{cells('th', headers)}</tr></thead><tbody>{body}</tbody></table>"

"""The editor help: what an action can use, from the built-ins' own docstrings."""

from __future__ import annotations

import html

import ipywidgets as widgets

from ...builtins.reference import action_reference

__all__ = ["ReferencePanel"]


class ReferencePanel(widgets.Accordion):
    """A collapsed "Reference" section listing ``req``, ``res``, ``fn.*``, ``db.*`` and
    ``http.*`` with their signatures and the first paragraph of their docstrings."""

    def __init__(self) -> None:
        rows = "".join(
            f'<tr><td style="padding:2px 8px;vertical-align:top;white-space:nowrap">'
            f"<code>{html.escape(entry.name + entry.signature)}</code></td>"
            f'<td style="padding:2px 8px">{html.escape(entry.summary)}</td></tr>'
            for entry in action_reference()
        )
        table = widgets.HTML(f'<table style="border-collapse:collapse">{rows}</table>')
        table.add_class("nk-reference-table")
        super().__init__(children=[table], selected_index=None)
        self.set_title(0, "Reference: req, res, fn, db, http")
        self.add_class("nk-reference")

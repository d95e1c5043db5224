"""What the notebook face needs beyond the base install: the ``notebook`` extra."""

from __future__ import annotations

import importlib

__all__ = ["INSTALL_NOTEBOOK_EXTRA", "require_notebook_extra"]

INSTALL_NOTEBOOK_EXTRA = "pip install 'notebook-kit[notebook]'"


def require_notebook_extra(what: str) -> None:
    """Raise one clear ``ModuleNotFoundError`` naming the install command when the widget
    libraries of the ``notebook`` extra are missing (a base install has none of them)."""
    try:
        for module in ("ipywidgets", "anywidget"):
            importlib.import_module(module)
    except ModuleNotFoundError as exc:
        raise ModuleNotFoundError(
            f"{what} needs the notebook extra, which is not installed (no module named "
            f"{exc.name!r}): {INSTALL_NOTEBOOK_EXTRA}",
            name=exc.name,
        ) from None

"""notebook_kit: define, test and publish small REST APIs from a Jupyter notebook.

>>> from notebook_kit import Workspace
>>> ws = Workspace()            # $NOTEBOOK_KIT_HOME or ~/.notebook_kit
>>> ws.install_sample()         # restapi_sample, deployed to dev and prod
"""

import typing

from .domain.models import Application, Constant, Definition, Deployment, Stage
from .errors import (
    ActionSyntaxError,
    BuiltinError,
    ConflictError,
    FormatError,
    NotebookKitError,
    NotFoundError,
    QuotaExceededError,
    StoreError,
    ValidationError,
)
from .runtime.server import BackgroundServer
from .workspace.workspace import Workspace

__version__ = "0.1.0"


def studio(ws: Workspace | None = None) -> typing.Any:
    """The notebook studio (an ipywidgets ``Studio``) over ``ws`` (default ``Workspace()``)."""
    from .notebook.ui import Studio  # ipywidgets only when the studio is asked for

    return Studio(ws if ws is not None else Workspace())


def load_ipython_extension(ipython: typing.Any) -> None:
    """``%load_ext notebook_kit``: registers the ``%%notebook_kit`` cell magic."""
    from .notebook.magic import load_ipython_extension as load

    load(ipython)


__all__ = [
    "ActionSyntaxError",
    "Application",
    "BackgroundServer",
    "BuiltinError",
    "ConflictError",
    "Constant",
    "Definition",
    "Deployment",
    "FormatError",
    "NotFoundError",
    "NotebookKitError",
    "QuotaExceededError",
    "Stage",
    "StoreError",
    "ValidationError",
    "Workspace",
    "__version__",
    "load_ipython_extension",
    "studio",
]

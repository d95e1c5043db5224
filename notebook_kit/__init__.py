"""notebook_kit: define, test and publish small REST APIs from a Jupyter notebook.

>>> from notebook_kit import Workspace
>>> ws = Workspace()            # $NOTEBOOK_KIT_HOME or ~/.notebook_kit
>>> ws.install_sample()         # restapi_sample, deployed to dev and prod

The faces load on first use: ``studio`` (ipywidgets), ``request_charts`` (pandas),
``serve``, ``serve_process`` and ``BackgroundServer`` (Sanic), so ``import notebook_kit``
and the CLI start quickly.
"""

import typing

from .errors import (
    ActionSyntaxError,
    BuiltinError,
    ConflictError,
    ExampleFailedError,
    FormatError,
    NotebookKitError,
    NotFoundError,
    QuotaExceededError,
    SandboxError,
    SecretKeyError,
    ServerError,
    StoreError,
    ValidationError,
)

if typing.TYPE_CHECKING:
    from .domain.checks import CheckReport
    from .domain.examples import Example
    from .domain.models import Application, Constant, Definition, Deployment, Stage
    from .notebook.workspace import Workspace

__version__ = "0.1.0"

# name -> (module, attribute), imported on first use: a process that imports one of the
# package's modules (an HTTP worker, the zygote, an action process) runs this file first,
# and must not pay for the workspace, the store and the notebook face it never uses
_LAZY = {
    "Application": ("notebook_kit.domain.models", "Application"),
    "BackgroundServer": ("notebook_kit.runtime.process.handles", "BackgroundServer"),
    "CheckReport": ("notebook_kit.domain.checks", "CheckReport"),
    "Constant": ("notebook_kit.domain.models", "Constant"),
    "Definition": ("notebook_kit.domain.models", "Definition"),
    "Deployment": ("notebook_kit.domain.models", "Deployment"),
    "Example": ("notebook_kit.domain.examples", "Example"),
    "Stage": ("notebook_kit.domain.models", "Stage"),
    "Workspace": ("notebook_kit.notebook.workspace", "Workspace"),
    "request_charts": ("notebook_kit.notebook.ui.charts", "request_charts"),
    "serve": ("notebook_kit.notebook.serving", "serve"),
    "serve_process": ("notebook_kit.notebook.serving", "serve_process"),
}


def __getattr__(name: str) -> typing.Any:
    if name in _LAZY:
        import importlib

        module, attribute = _LAZY[name]
        value = getattr(importlib.import_module(module), attribute)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'notebook_kit' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


def studio(ws: "Workspace | None" = None) -> typing.Any:
    """The notebook studio (an ipywidgets ``Studio``) over ``ws`` (default ``Workspace()``)."""
    from .notebook.ui import Studio  # ipywidgets only when the studio is asked for

    if ws is None:
        from .notebook.workspace import Workspace

        ws = Workspace()
    return Studio(ws)


def load_ipython_extension(ipython: typing.Any) -> None:
    """``%load_ext notebook_kit``: registers the ``%%notebook_kit`` cell magic."""
    from .notebook.magic import load_ipython_extension as load

    load(ipython)


__all__ = [
    "ActionSyntaxError",
    "Application",
    "BackgroundServer",
    "BuiltinError",
    "CheckReport",
    "ConflictError",
    "Constant",
    "Definition",
    "Deployment",
    "Example",
    "ExampleFailedError",
    "FormatError",
    "NotFoundError",
    "NotebookKitError",
    "QuotaExceededError",
    "SandboxError",
    "SecretKeyError",
    "ServerError",
    "Stage",
    "StoreError",
    "ValidationError",
    "Workspace",
    "__version__",
    "load_ipython_extension",
    "request_charts",
    "serve",
    "serve_process",
    "studio",
]

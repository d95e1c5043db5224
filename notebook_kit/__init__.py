"""notebook_kit: define, test and publish small REST APIs from a Jupyter notebook.

>>> from notebook_kit import Workspace
>>> ws = Workspace()            # $NOTEBOOK_KIT_HOME or ~/.notebook_kit
>>> ws.install_sample()         # restapi_sample, deployed to dev and prod
"""

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
from .models import Application, Constant, Definition, Deployment, Stage
from .server import BackgroundServer
from .workspace import Workspace

__version__ = "0.1.0"

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
]

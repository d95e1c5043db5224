"""The ``notebook-kit`` command: thin click commands over ``Workspace``.

Nothing heavy is imported here: ``notebook-kit --help`` loads neither Sanic nor pandas.
"""

from .main import main

__all__ = ["main"]

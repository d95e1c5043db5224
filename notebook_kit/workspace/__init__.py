"""``Workspace``: the one facade every face calls, with publishing, transfer and git commit."""

from .workspace import Workspace

__all__ = ["Workspace"]

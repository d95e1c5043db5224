"""``python -m notebook_kit`` is the ``notebook-kit`` command."""

from .cli import main

main()

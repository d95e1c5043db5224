"""``python -m notebook_kit`` is the ``notebook-kit`` command."""

from .cli.main import main

main()

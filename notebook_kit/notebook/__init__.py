"""The notebook face: the studio (``ui/``), the ``%%notebook_kit`` magic, pandas frames."""

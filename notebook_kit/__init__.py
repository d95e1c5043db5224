"""notebook_kit."""

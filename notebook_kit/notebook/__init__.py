"""Notebook-facing parts of notebook_kit."""

"""Widgets for the notebook studio."""

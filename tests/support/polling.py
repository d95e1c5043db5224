"""Polling helpers for behaviour that becomes true (or must stay true) over time."""

from __future__ import annotations

import time
from collections.abc import Callable

SLACK = 0.3  # seconds of polling and a loaded shared machine on top of a promise


def wait_until(check: Callable[[], bool], within: float = 1.0) -> float:
    """Poll ``check`` until true, failing past ``within`` (default: the issues' promise,
    live within a second) plus slack; returns the delay."""
    started = time.monotonic()
    while not check():
        elapsed = time.monotonic() - started
        if elapsed > within + SLACK:
            raise AssertionError(f"not true within {within} s (waited {elapsed:.2f} s)")
        time.sleep(0.02)
    return time.monotonic() - started


def stays(check: Callable[[], bool], for_seconds: float) -> None:
    """Assert ``check`` holds at every poll for ``for_seconds``."""
    until = time.monotonic() + for_seconds
    while time.monotonic() < until:
        assert check()
        time.sleep(0.05)

"""``StorePoller``: notice that another process (the CLI, another kernel, a server) changed
the workspace store, and say so.

A daemon thread reads ``Workspace.change_stamp()`` (a few aggregate reads, well under a
millisecond) every ``interval`` seconds and calls ``on_change()`` when it differs from the
last one seen. The studio's own changes move the stamp too; ``on_change`` re-reads, so
that costs one refresh. Widgets may be updated from this thread: ipywidgets sends their
state through the kernel's thread-safe IOPub channel (the same way the Logs panel redraws).

One poller per workspace polls in a process: starting one stops the one started before for
the same workspace home. A notebook cell that runs ``notebook_kit.studio(ws)`` again makes
a new studio without closing the old one; the old one stops refreshing by itself (its
``refresh()`` still works) instead of leaving a thread behind per run.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from ...errors import NotebookKitError
from ...workspace.workspace import Workspace

__all__ = ["StorePoller"]

_polling: dict[Path, StorePoller] = {}  # workspace home -> the poller running for it
_polling_lock = threading.Lock()


class StorePoller:
    """Call ``on_change()`` within ``interval`` seconds of any change to the store."""

    def __init__(
        self, workspace: Workspace, on_change: Callable[[], None], interval: float = 1.0
    ) -> None:
        self.workspace = workspace
        self.on_change = on_change
        self.interval = interval
        self.stamp = workspace.change_stamp()
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> StorePoller:
        """Poll in a daemon thread; the poller running for the same workspace stops."""
        home = self.workspace.home.resolve()
        with _polling_lock:
            previous = _polling.get(home)
            _polling[home] = self
        if previous is not None and previous is not self:
            previous.stop()
        if not self.running:
            self._stop.clear()
            self._thread = threading.Thread(
                target=self._run, name="notebook_kit-studio-refresh", daemon=True
            )
            self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop polling; returns once the thread has ended (or ``timeout`` passed)."""
        self._stop.set()
        with _polling_lock:
            home = self.workspace.home.resolve()
            if _polling.get(home) is self:
                del _polling[home]
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def check(self) -> bool:
        """Read the stamp once; call ``on_change`` if it moved. True when it did."""
        stamp = self.workspace.change_stamp()
        if stamp == self.stamp:
            return False
        self.stamp = stamp
        self.on_change()
        return True

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.check()
            except NotebookKitError as exc:  # a busy store: try again next round
                self.error = exc
            except Exception as exc:  # a widget refresh failed: keep polling, keep it
                self.error = exc
        self.workspace.store.close()  # this thread's connection

"""Starting sandboxed processes from the trusted side: the zygote and what it forks.

``zygote()`` is this process's zygote, started on first use: a fresh interpreter
(``sandbox.inside.zygote``) with only its control channel open and a short environment
(``child_environment``: paths, locale, proxies; no store URL, password or token), warm
once started. ``fork(plan, app, settings)`` then makes one action process, confined
by ``plan``, in a few milliseconds, and returns an ``ActionProcessHandle``: the two
channels (calls, services) and a way to kill it. One zygote serves every runner and
server of the process (a notebook's test runs and its ``ws.serve()``, say): the
confinement is each child's own. It ends with this process (``atexit``, or when its
channel closes because this process died).

``child_environment`` is the environment every sandboxed process is started with, and
``spawn_python`` how (the HTTP workers use both too).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import SandboxError
from .plan import SandboxPlan
from .protocol import ChannelClosed, receive, send

__all__ = ["ActionProcessHandle", "Zygote", "child_environment", "spawn_python", "zygote"]

_ZYGOTE_START_SECONDS = 60  # a warm interpreter: well under a second on an idle machine

# What a sandboxed process inherits of this one's environment: where programs, Python
# and TLS roots are, the locale and time zone, the proxies. Nothing else: the server's
# environment holds what actions must not see (the store's URL and settings given as
# NOTEBOOK_KIT_*, PGPASSWORD, cloud credentials, tokens of CI or of the shell).
_INHERITED = frozenset(
    (
        "PATH",
        "HOME",
        "LANG",
        "LANGUAGE",
        "TZ",
        "PYTHONPATH",
        "PYTHONHOME",
        "PYTHONUTF8",
        "PYTHONIOENCODING",
        "PYTHONDONTWRITEBYTECODE",
        "VIRTUAL_ENV",
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "NO_PROXY",
        "http_proxy",
        "https_proxy",
        "no_proxy",
    )
)


def child_environment() -> dict[str, str]:
    """The environment of every sandboxed process: this one's ``_INHERITED`` variables
    and its ``LC_*`` (locale) ones, nothing else."""
    return {k: v for k, v in os.environ.items() if k in _INHERITED or k.startswith("LC_")}


def spawn_python(module: str, keep: Sequence[int], cwd: str, args: Sequence[str] = ()) -> Any:
    """``python -P -m module args...`` with only the descriptors ``keep`` (and stdio)
    inherited, in ``cwd``, with ``child_environment()``."""
    return subprocess.Popen(
        [sys.executable, "-P", "-m", module, *args],
        pass_fds=tuple(keep),
        close_fds=True,
        env=child_environment(),
        cwd=cwd,
        stdin=subprocess.DEVNULL,
    )


@dataclass(eq=False)
class ActionProcessHandle:
    """One action process: ``calls`` (send it work), ``services`` (answer what it asks),
    and ``kill()``. ``app`` is the application whose code it may run."""

    pid: int
    app: str
    calls: socket.socket
    services: socket.socket
    pidfd: int | None = None
    dead: bool = field(default=False)

    def kill(self) -> None:
        """End it now (SIGKILL), with whatever it started, and close its channels; safe
        to call twice."""
        if not self.dead:
            self.dead = True
            with contextlib.suppress(OSError):  # it leads its own process group
                os.killpg(self.pid, signal.SIGKILL)
            with contextlib.suppress(OSError):
                if self.pidfd is not None:
                    signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
                else:
                    os.kill(self.pid, signal.SIGKILL)
        for sock in (self.calls, self.services):
            with contextlib.suppress(OSError):
                sock.close()
        if self.pidfd is not None:
            with contextlib.suppress(OSError):
                os.close(self.pidfd)
            self.pidfd = None


class Zygote:
    """The trusted side's handle on one zygote (thread-safe: forks are serialised)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._control: socket.socket | None = None
        self._process: Any = None

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def start(self) -> Zygote:
        """Spawn it and wait until it is warm (SandboxError if it cannot start)."""
        with self._lock:
            if self.running:
                return self
            ours, theirs = socket.socketpair()
            try:
                self._process = spawn_python(
                    "notebook_kit.sandbox.inside.zygote",
                    [theirs.fileno()],
                    "/",
                    [str(theirs.fileno())],
                )
            finally:
                theirs.close()
            self._control = ours
            ours.settimeout(_ZYGOTE_START_SECONDS)
            try:
                if not receive(ours).header.get("ready"):
                    raise SandboxError("the zygote did not start")
            except ChannelClosed:
                self._stop()
                raise SandboxError(
                    "the process that starts action processes exited at start (see the log)"
                ) from None
            except TimeoutError:
                self._stop()
                raise SandboxError(
                    "the process that starts action processes was not ready within "
                    f"{_ZYGOTE_START_SECONDS} s"
                ) from None
            ours.settimeout(None)
        return self

    def fork(self, plan: SandboxPlan, app: str, settings: Mapping[str, Any]) -> ActionProcessHandle:
        """A new action process confined by ``plan``, for ``app``, whose built-ins see
        ``settings``."""
        calls, calls_child = socket.socketpair()
        services, services_child = socket.socketpair()
        try:
            with self._lock:
                if self._control is None or not self.running:
                    raise SandboxError("the zygote is not running")
                header = {
                    "op": "fork",
                    "plan": plan.to_dict(),
                    "app": app,
                    "settings": dict(settings),
                }
                send(self._control, header, fds=[calls_child.fileno(), services_child.fileno()])
                reply = receive(self._control)
        except (ChannelClosed, OSError) as exc:
            for sock in (calls, services):
                sock.close()
            raise SandboxError(f"cannot start an action process: {exc}") from None
        finally:
            calls_child.close()
            services_child.close()
        pid = reply.header.get("pid")
        if not isinstance(pid, int):
            calls.close()
            services.close()
            raise SandboxError(f"cannot start an action process: {reply.header.get('error')}")
        pidfd = reply.fds[0] if reply.fds else None
        return ActionProcessHandle(pid, app, calls, services, pidfd)

    def _stop(self) -> None:
        if self._control is not None:
            self._control.close()  # the zygote kills its children and exits
            self._control = None
        if self._process is not None:
            try:
                self._process.wait(2)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
            self._process = None

    def stop(self) -> None:
        """Stop it and every action process it forked."""
        with self._lock:
            self._stop()


_shared: list[Zygote] = []  # this process's zygote, once started
_shared_lock = threading.Lock()


def zygote() -> Zygote:
    """This process's zygote, started (again, if it died) on first use."""
    with _shared_lock:
        if not _shared:
            _shared.append(Zygote())
            atexit.register(_shared[0].stop)
        found = _shared[0]
    return found.start()

"""A real nginx from Debian's packages in front of ``notebook-kit serve`` nodes, for the tests.

``FrontDoor`` renders the shipped recipe (``deploy/nginx/notebook-kit.conf``) with the
nodes' and its own free loopback ports, wraps it in a minimal main configuration of its
own (pid, logs and temp files in a temp directory: no system service, no /var), and runs
nginx in the foreground. The main configuration adds one header, ``X-Upstream`` (the
node that answered), so a test can tell the nodes apart. ``Load`` is a few client
threads calling one URL through it, recording every answer and every failure.
"""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

__all__ = ["RECIPE", "Answer", "FrontDoor", "Load", "nginx_binary", "render_recipe"]

RECIPE = Path(__file__).resolve().parents[2] / "deploy" / "nginx" / "notebook-kit.conf"

_SERVER_LINE = re.compile(r"^(\s*)server 127\.0\.0\.1:\d+( [^;]*)?;\n", re.MULTILINE)
_LISTEN_LINE = re.compile(r"listen 127\.0\.0\.1:\d+;")

_MAIN = """\
daemon off;
worker_processes 1;
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    client_body_temp_path {dir}/temp/body;
    proxy_temp_path {dir}/temp/proxy;
    fastcgi_temp_path {dir}/temp/fastcgi;
    uwsgi_temp_path {dir}/temp/uwsgi;
    scgi_temp_path {dir}/temp/scgi;
    add_header X-Upstream $upstream_addr always;
    include {dir}/notebook-kit.conf;
}}
"""


def nginx_binary() -> str:
    """The nginx executable, or skip (with the reason) where it is not installed."""
    found = shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin:/usr/local/sbin")
    if found is None:
        pytest.skip("nginx is not installed (apt-get install nginx)")
    return found


def render_recipe(recipe: str, listen: int, nodes: list[int]) -> str:
    """The recipe with its front port ``listen`` and one upstream line per node port
    (keeping the recipe's parameters, ``max_fails`` and ``fail_timeout``)."""
    first = _SERVER_LINE.search(recipe)
    assert first is not None, "the recipe has no 'server 127.0.0.1:PORT ...;' line"
    indent, params = first.group(1), first.group(2) or ""
    lines = "".join(f"{indent}server 127.0.0.1:{port}{params};\n" for port in nodes)
    upstream = _SERVER_LINE.sub("", recipe)
    upstream = upstream[: first.start()] + lines + upstream[first.start() :]
    rendered, count = _LISTEN_LINE.subn(f"listen 127.0.0.1:{listen};", upstream)
    assert count == 1, "the recipe has no single 'listen 127.0.0.1:PORT;' line"
    return rendered


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class FrontDoor:
    """nginx on a free loopback port, balancing over the node ``ports``."""

    def __init__(self, nodes: list[int]) -> None:
        self.binary = nginx_binary()
        self.dir = Path(tempfile.mkdtemp(prefix="notebook-kit-nginx-"))
        (self.dir / "temp").mkdir()
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        (self.dir / "notebook-kit.conf").write_text(
            render_recipe(RECIPE.read_text(), self.port, nodes)
        )
        (self.dir / "nginx.conf").write_text(_MAIN.format(dir=self.dir))
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 10.0) -> FrontDoor:
        conf = str(self.dir / "nginx.conf")
        command = [self.binary, "-p", str(self.dir), "-c", conf, "-e", str(self.dir / "error.log")]
        with (self.dir / "stderr.log").open("wb") as stderr:  # a file: a full pipe would block
            self.process = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                error = (self.dir / "stderr.log").read_text(errors="replace").strip()
                raise AssertionError(f"nginx exited: {error or self.error_log()}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return self
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise AssertionError(f"nginx did not listen on {self.port} within {timeout} s")

    def error_log(self) -> str:
        path = self.dir / "error.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def stop(self) -> None:
        """Stop nginx (SIGQUIT: graceful) and remove its directory."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(3)  # SIGQUIT
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> FrontDoor:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


@dataclass(frozen=True)
class Answer:
    sent: float  # time.monotonic() when the request left
    received: float
    status: int
    body: str
    upstream: str  # the node nginx passed it to (its last try when it retried)


@dataclass
class Load:
    """``threads`` clients calling ``url`` back to back until ``stop()``."""

    url: str
    headers: dict[str, str]
    threads: int = 3
    answers: list[Answer] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _workers: list[threading.Thread] = field(default_factory=list)

    def start(self) -> Load:
        for n in range(self.threads):
            worker = threading.Thread(target=self._run, name=f"load-{n}", daemon=True)
            worker.start()
            self._workers.append(worker)
        return self

    def _run(self) -> None:
        with httpx.Client(headers=self.headers, timeout=10) as client:
            while not self._stop.is_set():
                sent = time.monotonic()
                try:
                    response = client.get(self.url)
                except httpx.HTTPError as exc:
                    self.failures.append(f"{type(exc).__name__}: {exc}")
                    continue
                answer = Answer(
                    sent,
                    time.monotonic(),
                    response.status_code,
                    response.text,
                    response.headers.get("x-upstream", ""),
                )
                if response.status_code != 200:
                    self.failures.append(f"{response.status_code} {response.text[:200]}")
                self.answers.append(answer)

    def stop(self) -> None:
        self._stop.set()
        for worker in self._workers:
            worker.join(15)

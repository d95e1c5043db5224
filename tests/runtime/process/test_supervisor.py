"""What the supervisor guarantees, watching from outside the workers' GIL (issue: action
code out of the process that serves everyone): a worker frozen in an inline call is
killed and replaced and the action never runs inline again; a worker that dies is
replaced; an action process that dies mid-call answers 502; one past its memory limit
500; SIGTERM stops the server within 10 s whatever the actions do. Real ``notebook-kit
serve`` processes over real HTTP; the calls are a calculator's."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from support.polling import wait_until
from support.tree import action_pids, descendants, worker_pids

from notebook_kit.domain.models import Constant
from notebook_kit.runtime.process.handles import ServerProcess
from notebook_kit.workspace.workspace import Workspace

APP = "watched"
CALC = b'{"arg1": 1, "arg2": 2, "operation": "plus"}'
# Fast until the file "freeze" exists in the files root; then a catastrophic regex: C code
# holding the GIL for hours, which no signal handler in the process can interrupt.
FREEZER = (
    "import os, re\n"
    "if 'freeze' in fn.getFileNames(''):\n"
    "    re.match(r'(a+)+$', 'a' * 34 + 'b')\n"
    "res.body = {'pid': os.getpid()}\n"
)
# Fast until the file "garble" exists; then, run inline, it writes junk into every Unix
# socket the worker holds (its channels to the supervisor among them).
GARBLER = (
    "import os, socket, stat\n"
    "if 'garble' in fn.getFileNames(''):\n"
    "    for name in os.listdir('/proc/self/fd'):\n"
    "        try:\n"
    "            fd = int(name)\n"
    "            if stat.S_ISSOCK(os.fstat(fd).st_mode):\n"
    "                s = socket.socket(fileno=os.dup(fd))\n"
    "                if s.family == socket.AF_UNIX:\n"
    "                    s.send(b'\\xff' * 64)\n"
    "                s.detach()\n"
    "        except OSError:\n"
    "            pass\n"
    "res.body = {'pid': os.getpid()}\n"
)
ACTIONS = {
    "freezer": FREEZER,
    "garbler": GARBLER,
    "crash": "import os\nos._exit(3)\n",
    "hog": "x = bytearray(2 * 1024 ** 3)\nx[::4096] = b'1' * (len(x) // 4096)\nres.body = 'no'\n",
    "spin": "while True:\n    pass\n",
    "pid": "import os\nres.body = {'pid': os.getpid()}\n",
}
LOADER = (
    "import os\n"
    "_pids = open(const.PIDS).read().split() if os.path.exists(const.PIDS) else []\n"
    "while str(os.getpid()) in _pids:\n"
    "    pass\n"
)


@pytest.fixture(scope="module")
def watched_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ws = Workspace(tmp_path_factory.mktemp("watched") / "workspace")
    ws.install_sample()
    for name, action in ACTIONS.items():
        ws.create(APP, name, label=name, method="GET", resource=name, action=action)
        ws.edit(APP, name, requires_auth=False)
    ws.edit(APP, "freezer", timeout=2)
    ws.create(  # its user functions never return in a process whose pid the file names
        APP,
        "loader",
        label="loader",
        method="GET",
        resource="loader",
        action="import os\nres.body = {'pid': os.getpid()}\n",
        functions=LOADER,
        requires_auth=False,
        constants=[Constant("PIDS", "String", str(ws.home / "files" / "spin-in"))],
    )
    ws.set_setting("action_memory_limit", "256")
    ws.deploy(APP, "dev")
    return ws.home


@pytest.fixture
def start(watched_home: Path) -> Iterator[Callable[..., ServerProcess]]:
    started: list[ServerProcess] = []

    def run(workers: int = 1) -> ServerProcess:
        server = ServerProcess(watched_home, workers=workers).start()
        started.append(server)
        return server

    yield run
    for server in started:
        server.stop()
    (watched_home / "files" / "freeze").unlink(missing_ok=True)
    (watched_home / "files" / "spin-in").unlink(missing_ok=True)
    (watched_home / "files" / "garble").unlink(missing_ok=True)


def _calculator(server: ServerProcess, key: str, stop: threading.Event, out: list[int]) -> None:
    """Calls the calculator until ``stop``, each on a fresh connection; the statuses (0:
    the connection failed) in ``out``."""
    while not stop.is_set():
        try:
            answer = httpx.post(
                f"{server.url}/dev/restapi_sample/calculator",
                content=CALC,
                headers={"x-api-key": key},
                timeout=10,
            )
            out.append(answer.status_code)
        except httpx.TransportError:
            out.append(0)
        time.sleep(0.02)


def _promote(client: httpx.Client, url: str, workers: set[int]) -> int:
    """Call ``url`` until it answers from a worker itself (inline); that worker's pid."""
    for _ in range(400):
        pid = client.get(url).json()["pid"]
        if pid in workers:
            return int(pid)
    raise AssertionError(f"{url} never ran inline")


@pytest.mark.parametrize("workers", [1, 2])
def test_a_worker_frozen_in_an_inline_call_is_replaced_and_the_action_quarantined(
    start: Callable[..., ServerProcess], watched_home: Path, workers: int
) -> None:
    server = start(workers)
    assert server.process is not None
    pids = worker_pids(server.process.pid)
    key = Workspace(watched_home).keys()["dev"]
    url = f"{server.url}/dev/{APP}/freezer"
    with httpx.Client(timeout=10, limits=httpx.Limits(max_keepalive_connections=0)) as client:
        frozen = _promote(client, url, pids)
        (watched_home / "files" / "freeze").write_text("x")
        statuses: list[int] = []
        stop = threading.Event()
        others = threading.Thread(target=_calculator, args=(server, key, stop, statuses))
        others.start()
        try:
            began = time.monotonic()
            with pytest.raises(httpx.TransportError):  # its worker is killed under it
                for _ in range(50):  # until a call lands on the frozen worker
                    began = time.monotonic()
                    client.get(url, timeout=5)
            wait_until(lambda: frozen not in worker_pids(server.process.pid), within=5)  # type: ignore[union-attr]
            replaced_after = time.monotonic() - began
            wait_until(lambda: len(worker_pids(server.process.pid)) == workers, within=10)  # type: ignore[union-attr]
            # From now on it runs in action processes, killed at its limit: a 504, never
            # a freeze.
            late = client.get(url, timeout=10)
        finally:
            stop.set()
            others.join()
    assert late.status_code == 504, late.text
    assert replaced_after < 4
    log = server.log_path.read_text()
    assert "held its loop in one call" in log and "action processes only" in log
    assert statuses and statuses.count(200) >= len(statuses) // 2
    if workers == 2:  # the other worker answered throughout
        assert 0 not in statuses[len(statuses) // 4 :] or statuses.count(0) <= 2


def test_a_killed_worker_is_replaced(
    start: Callable[..., ServerProcess], watched_home: Path
) -> None:
    server = start(2)
    assert server.process is not None
    first = min(worker_pids(server.process.pid))
    os.kill(first, signal.SIGKILL)
    wait_until(lambda: len(worker_pids(server.process.pid) - {first}) == 2, within=5)  # type: ignore[union-attr]
    assert "was ended by SIGKILL: starting another" in server.log_path.read_text()
    key = Workspace(watched_home).keys()["dev"]
    answer = httpx.post(
        f"{server.url}/dev/restapi_sample/calculator", content=CALC, headers={"x-api-key": key}
    )
    assert answer.status_code == 200 and answer.text == "3"


def test_an_action_process_that_dies_mid_call_answers_502(
    start: Callable[..., ServerProcess], watched_home: Path
) -> None:
    server = start()
    answer = httpx.get(f"{server.url}/dev/{APP}/crash", timeout=10)
    assert answer.status_code == 502
    body = answer.json()
    assert (
        body["message"] == f"Bad Gateway: the process running {APP}/crash ended before it answered"
    )
    assert answer.headers["access-control-allow-origin"] == "*"
    again = httpx.get(f"{server.url}/dev/{APP}/pid", timeout=10)
    assert again.status_code == 200  # the server goes on
    server.stop()
    logged = [r for r in Workspace(watched_home).request_log() if r["path"].endswith("/crash")]
    assert logged and logged[-1]["status"] == 502


def test_an_allocation_past_the_memory_limit_ends_that_call_only(
    start: Callable[..., ServerProcess], watched_home: Path
) -> None:
    server = start()
    answer = httpx.get(f"{server.url}/dev/{APP}/hog", timeout=30)
    assert answer.status_code == 500
    assert answer.json()["message"] == (
        "Internal server error: the action used more memory than its limit (256 MiB)"
    )
    key = Workspace(watched_home).keys()["dev"]
    calc = httpx.post(
        f"{server.url}/dev/restapi_sample/calculator", content=CALC, headers={"x-api-key": key}
    )
    assert calc.status_code == 200


def test_sigterm_stops_the_server_within_ten_seconds_whatever_actions_do(
    start: Callable[..., ServerProcess], watched_home: Path
) -> None:
    server = start(2)
    assert server.process is not None
    pids = worker_pids(server.process.pid)
    with httpx.Client(timeout=10, limits=httpx.Limits(max_keepalive_connections=0)) as client:
        _promote(client, f"{server.url}/dev/{APP}/freezer", pids)
    (watched_home / "files" / "freeze").write_text("x")
    hung: list[threading.Thread] = []
    for path in ("freezer", "spin", "spin"):  # a frozen worker, two spinning processes
        thread = threading.Thread(target=_call_ignoring_errors, args=(server, path))
        thread.start()
        hung.append(thread)
    time.sleep(0.5)
    tree = [server.process.pid, *descendants(server.process.pid)]
    assert action_pids(server.process.pid)
    began = time.monotonic()
    server.process.send_signal(signal.SIGTERM)
    server.process.wait(timeout=12)
    took = time.monotonic() - began
    for thread in hung:
        thread.join()
    assert took < 10, took
    wait_until(lambda: not any(Path(f"/proc/{p}").exists() for p in tree), within=2)


def _call_ignoring_errors(server: ServerProcess, path: str) -> None:
    with contextlib.suppress(httpx.HTTPError):
        httpx.get(f"{server.url}/dev/{APP}/{path}", timeout=15)


def test_a_freeze_right_after_a_quiet_spell_is_seen_at_once(
    start: Callable[..., ServerProcess], watched_home: Path
) -> None:
    """An idle node's supervisor stops looking at the pages; the worker's first inline
    call wakes it (before it runs), so a call that freezes then is still ended within
    about a second, not at the idle look 10 s later."""
    server = start()
    assert server.process is not None
    url = f"{server.url}/dev/{APP}/freezer"
    with httpx.Client(timeout=10, limits=httpx.Limits(max_keepalive_connections=0)) as client:
        frozen = _promote(client, url, worker_pids(server.process.pid))
        time.sleep(3)  # quiet: past the supervisor's busy window
        (watched_home / "files" / "freeze").write_text("x")
        began = time.monotonic()
        with pytest.raises(httpx.TransportError):
            client.get(url, timeout=9)
        took = time.monotonic() - began
    assert frozen not in worker_pids(server.process.pid)
    assert took < 4, took


def test_user_functions_that_never_return_in_a_worker_are_seen_like_a_frozen_call(
    start: Callable[..., ServerProcess], watched_home: Path
) -> None:
    """A worker runs no code of a definition before its first inline call, and loading
    it is watched like a call: user functions that never return there (though they load
    in action processes and at deploy) freeze neither the worker's builds nor the node.
    The worker is replaced, the action quarantined, and a later deploy still goes live."""
    server = start()
    assert server.process is not None
    (worker,) = worker_pids(server.process.pid)
    (watched_home / "files" / "spin-in").write_text(str(worker))
    url = f"{server.url}/dev/{APP}/loader"
    with httpx.Client(timeout=10, limits=httpx.Limits(max_keepalive_connections=0)) as client:
        with pytest.raises(httpx.TransportError):  # the first inline call: its worker killed
            for _ in range(400):
                assert client.get(url, timeout=5).json()["pid"] != worker
        wait_until(lambda: worker_pids(server.process.pid) - {worker}, within=5)  # type: ignore[union-attr]
        after = client.get(url)  # in an action process from now on
        assert after.status_code == 200 and after.json()["pid"] not in worker_pids(
            server.process.pid  # type: ignore[union-attr]
        )
        ws = Workspace(watched_home)
        ws.edit(APP, "pid", action="res.body = {'pid': 'redeployed'}")
        ws.deploy(APP, "dev")
        answers: list[httpx.Response] = []
        wait_until(
            lambda: (
                answers.append(client.get(f"{server.url}/dev/{APP}/pid")) is None
                and answers[-1].json().get("pid") == "redeployed"
            ),
            within=5,
        )
        assert all(a.status_code == 200 for a in answers), [a.text for a in answers]
    assert "held its loop in one call" in server.log_path.read_text()


def test_a_worker_that_sends_junk_is_replaced_and_the_server_goes_on(
    start: Callable[..., ServerProcess], watched_home: Path
) -> None:
    """Action code inline in a worker can write into the worker's channels: the supervisor
    takes nothing it cannot read, replaces that worker, and goes on serving."""
    server = start()
    assert server.process is not None
    key = Workspace(watched_home).keys()["dev"]
    url = f"{server.url}/dev/{APP}/garbler"
    with httpx.Client(timeout=10, limits=httpx.Limits(max_keepalive_connections=0)) as client:
        garbled = _promote(client, url, worker_pids(server.process.pid))
        (watched_home / "files" / "garble").write_text("x")
        with contextlib.suppress(httpx.TransportError):
            client.get(url, timeout=5)  # inline: the worker writes junk, and is killed
        wait_until(lambda: garbled not in worker_pids(server.process.pid), within=5)  # type: ignore[union-attr]
        wait_until(lambda: len(worker_pids(server.process.pid)) == 1, within=10)  # type: ignore[union-attr]
        calc = client.post(
            f"{server.url}/dev/restapi_sample/calculator",
            content=CALC,
            headers={"x-api-key": key},
        )
    assert calc.status_code == 200 and calc.text == "3"
    assert server.process.poll() is None  # the supervisor itself is fine
    assert "sent what is not a message" in server.log_path.read_text()

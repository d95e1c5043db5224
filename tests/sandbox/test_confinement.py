"""Action code cannot reach the store, the keys or the trusted side, by any route
(docs/trust-model.md): each route tried by a real action, in a fresh action process
(a test run) and inline in a real server's HTTP worker, both kept by the kernel.

The trusted side here is the test process itself: it holds the store open, its memory
holds the keys (the workspace read them) and ``BackgroundServer`` runs the supervisor on
one of its threads. So ``/proc/<this pid>/...``, ptrace and signals to this pid are the
routes to the supervisor an action would try.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from notebook_kit.runtime.process.handles import BackgroundServer
from notebook_kit.sandbox.inside.landlock import abi
from notebook_kit.workspace.workspace import Workspace

pytestmark = pytest.mark.skipif(abi() == 0, reason="this kernel has no Landlock")

APP = "probe"

# Every route an action might take to the store, the keys or the trusted side; each
# returns what it got, or "denied ..." with the error that stopped it.
PROBE_FUNCTIONS = """
import ctypes, gc, hashlib, os, socket, sqlite3, subprocess

LIBC = ctypes.CDLL(None, use_errno=True)


def _store_routes(route, store, home, files):
    if route == "open":
        return "read " + open(store, "rb").read(16).hex()
    if route == "sqlite":
        return repr(sqlite3.connect(store).execute("SELECT key FROM api_keys").fetchall())
    if route == "sqlite_uri":
        uri = f"file:{store}?mode=ro"
        return repr(sqlite3.connect(uri, uri=True).execute("SELECT key FROM api_keys").fetchall())
    if route == "attach":
        db.execute(f"ATTACH DATABASE '{store}' AS s")
        return repr(db.query("SELECT key FROM s.api_keys"))
    if route == "ctypes_open":
        fd = LIBC.open(store.encode(), os.O_RDONLY)
        return f"opened fd {fd}" if fd >= 0 else f"denied errno {ctypes.get_errno()}"
    if route == "subprocess":
        done = subprocess.run(["cat", store], capture_output=True)
        if done.returncode:
            return "denied " + done.stderr.decode()[:80]
        return "read " + done.stdout[:16].hex()
    if route == "fork":
        pid = os.fork()
        if pid == 0:
            try:
                open(store, "rb").read(1)
                os._exit(0)
            except OSError:
                os._exit(3)
        return "read" if os.waitpid(pid, 0)[1] == 0 else "denied in the child"
    if route == "workspace":
        from notebook_kit.workspace.workspace import Workspace
        return repr(Workspace(home).keys())
    if route == "unlink":
        os.unlink(store)
        return "removed"
    if route == "rename":
        os.rename(store, store + ".gone")
        return "renamed"
    if route == "write_home":
        open(os.path.join(home, "planted"), "w").write("x")
        return "written"
    if route == "list_home":
        return repr(os.listdir(home))
    if route == "symlink":
        link = os.path.join(files, "to-store")
        if not os.path.islink(link):
            os.symlink(store, link)
        return "read " + open(link, "rb").read(16).hex()
    if route == "hardlink":
        os.link(store, os.path.join(files, "hard-store"))
        return "linked"
    return None


def _process_routes(route, target):
    if route == "environ":
        return "read " + open(f"/proc/{target}/environ", "rb").read(64).hex()
    if route == "fds":
        return repr(os.listdir(f"/proc/{target}/fd"))
    if route == "fd_store":
        for name in os.listdir(f"/proc/{target}/fd"):
            return "read " + open(f"/proc/{target}/fd/{name}", "rb").read(16).hex()
    if route == "mem":
        return "opened " + repr(open(f"/proc/{target}/mem", "rb"))
    if route == "ptrace":
        if LIBC.ptrace(16, target, None, None) == 0:  # PTRACE_ATTACH
            LIBC.ptrace(17, target, None, None)  # PTRACE_DETACH
            return "attached"
        return f"denied errno {ctypes.get_errno()}"
    if route == "signal":
        os.kill(target, 0)
        return "may signal"
    if route == "unix_socket":
        socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        return "made a Unix socket"
    return None


def _datagram(path):
    # a datagram pair's socket may send to any named datagram socket (the system log)
    ours, _ = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    ours.sendto(b"from an action", path)
    return "sent to " + path


def _strings_in_memory():
    # Every string the collector can reach, one container deep past what it tracks (a
    # dict holding only strings is not tracked itself).
    for thing in gc.get_objects():
        for child in gc.get_referents(thing):
            if isinstance(child, str):
                yield child
            elif isinstance(child, dict):
                yield from (v for v in child.values() if isinstance(v, str))
            elif isinstance(child, (list, tuple)):
                yield from (v for v in child if isinstance(v, str))


def _keys_in_memory(digests):
    for value in _strings_in_memory():
        if len(value) == 40 and hashlib.sha256(value.encode()).hexdigest() in digests:
            return "found keys"
    return "none"


def attempt(route, query):
    try:
        if route == "where":
            return str(os.getpid())
        if route == "keys":
            return _keys_in_memory(query["digests"].split(","))
        if route == "store_env":
            allowed = query["allowed"].split(",")
            leaked = [k for k in os.environ if k not in allowed and not k.startswith("LC_")]
            return "none" if not leaked else repr(sorted(leaked))
        if route == "unix_dgram":
            return _datagram(query["dgram"])
        found = _store_routes(route, query["store"], query["home"], query["files"])
        if found is None:
            found = _process_routes(route, int(query["target"]))
        return found
    except Exception as exc:
        return f"denied {type(exc).__name__}: {exc}"
"""

STORE_ROUTES = [
    "open",
    "sqlite",
    "sqlite_uri",
    "attach",
    "ctypes_open",
    "subprocess",
    "fork",
    "workspace",
    "unlink",
    "rename",
    "write_home",
    "list_home",
    "symlink",
    "hardlink",
]
# The only variables a sandboxed process inherits (and TMPDIR, its own): a password, a
# token or the store's URL in the server's environment reaches no action.
INHERITED = [
    *("PATH", "HOME", "LANG", "LANGUAGE", "TZ", "TMPDIR", "VIRTUAL_ENV"),
    *("PYTHONPATH", "PYTHONHOME", "PYTHONUTF8", "PYTHONIOENCODING", "PYTHONDONTWRITEBYTECODE"),
    *("SSL_CERT_FILE", "SSL_CERT_DIR", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"),
    *("http_proxy", "https_proxy", "no_proxy"),
    # set in the HTTP worker by Sanic's own logging set-up, not inherited
    *("SANIC_LOG_EXTRA", "SANIC_NO_COLOR"),
]
PROCESS_ROUTES = [
    *("environ", "fds", "fd_store", "mem", "ptrace", "signal", "unix_socket", "unix_dgram")
]


def make_probe(ws: Workspace) -> None:
    ws.create(
        APP,
        "try",
        label="try a route",
        method="GET",
        resource="try/{route}",
        action="res.body = {'outcome': attempt(req.pathParameters['route'], "
        "req.queryStringParameters)}",
        functions=PROBE_FUNCTIONS,
        requires_auth=False,
    )
    ws.deploy(APP, "dev")


def query(ws: Workspace) -> dict[str, str]:
    digests = [hashlib.sha256(key.encode()).hexdigest() for key in ws.keys().values()]
    return {
        "store": str(ws.home / "workspace.sqlite3"),
        "home": str(ws.home),
        "files": str(ws.home / "files"),
        "target": str(os.getpid()),
        "digests": ",".join(digests),
        "allowed": ",".join(INHERITED),
        "dgram": str(ws.home.parent / "dgram.sock"),  # bound by ``probed``
    }


@pytest.fixture(scope="module")
def probed(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Workspace, BackgroundServer]]:
    home = tmp_path_factory.mktemp("confined") / "home"
    ws = Workspace(home)
    make_probe(ws)
    planted = {"PGPASSWORD": "planted", "AWS_SECRET_ACCESS_KEY": "planted"}
    os.environ.update(planted)  # in the server's environment as its worker starts
    listening = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    listening.bind(str(home.parent / "dgram.sock"))
    listening.setblocking(False)
    try:
        with BackgroundServer(ws) as server:
            yield ws, server
    finally:
        for name in planted:
            os.environ.pop(name, None)
        with contextlib.suppress(BlockingIOError):
            assert listening.recv(100) == b"", "an action sent to a named datagram socket"
        listening.close()


def _needs_scoping(route: str) -> None:
    if route == "signal" and abi() < 6:  # Landlock scopes signals from ABI 6 (Linux 6.12)
        pytest.skip("this kernel's Landlock does not scope signals (the server warns)")


def _intact(ws: Workspace) -> None:
    """The store is where it was, whole, and nothing was planted beside it."""
    assert (ws.home / "workspace.sqlite3").exists()
    assert not (ws.home / "workspace.sqlite3.gone").exists()
    assert not (ws.home / "planted").exists()
    assert not (ws.home / "files" / "hard-store").exists()
    assert len(ws.keys()["dev"]) == 40


@pytest.mark.parametrize("route", STORE_ROUTES + PROCESS_ROUTES)
def test_a_test_run_reaches_nothing_of_the_trusted_side(
    probed: tuple[Workspace, BackgroundServer], route: str
) -> None:
    ws, _ = probed
    _needs_scoping(route)
    answer = ws.invoke(APP, "try", path_parameters={"route": route}, query=query(ws))
    outcome = answer.json()["outcome"]
    assert outcome.startswith("denied"), outcome
    _intact(ws)


@pytest.fixture(scope="module")
def inline(probed: tuple[Workspace, BackgroundServer]) -> Iterator[httpx.Client]:
    """A client whose calls of the probe run inline in the server's HTTP worker."""
    _, server = probed
    assert server.supervisor is not None
    worker_pid = str(server.supervisor.workers[0].pid)
    with httpx.Client(base_url=server.url, timeout=30) as client:
        where = None
        for _ in range(200):  # proven fast: it moves from the action processes inline
            where = client.get(f"/dev/{APP}/try/where").json()["outcome"]
            if where == worker_pid:
                break
        assert where == worker_pid, "the probe never ran inline in the worker"
        yield client


@pytest.mark.parametrize("route", STORE_ROUTES + PROCESS_ROUTES)
def test_an_inline_call_in_the_http_worker_reaches_nothing_of_the_trusted_side(
    probed: tuple[Workspace, BackgroundServer], inline: httpx.Client, route: str
) -> None:
    ws, _ = probed
    _needs_scoping(route)
    outcome = inline.get(f"/dev/{APP}/try/{route}", params=query(ws)).json()["outcome"]
    assert outcome.startswith("denied"), outcome
    _intact(ws)


def test_the_probe_reaches_what_it_may(
    probed: tuple[Workspace, BackgroundServer], inline: httpx.Client
) -> None:
    """The probe is no blind test: the same routes to a file of the files root read it,
    and a 40-character string in the process's memory is found by its digest."""
    ws, _ = probed
    allowed = ws.home / "files" / "allowed.txt"
    allowed.write_bytes(b"readable")
    marker = "m" * 40
    given = {
        **query(ws),
        "store": str(allowed),
        "marker": marker,
        "digests": hashlib.sha256(marker.encode()).hexdigest(),
    }
    for route in ("open", "ctypes_open", "subprocess", "fork"):
        outcome = inline.get(f"/dev/{APP}/try/{route}", params=given).json()["outcome"]
        assert not outcome.startswith("denied"), (route, outcome)
        tried = ws.invoke(APP, "try", path_parameters={"route": route}, query=given)
        assert not tried.json()["outcome"].startswith("denied"), (route, tried.text)
    assert inline.get(f"/dev/{APP}/try/keys", params=given).json()["outcome"] == "found keys"


def test_no_key_and_no_variable_of_the_servers_environment_reaches_actions(
    probed: tuple[Workspace, BackgroundServer], inline: httpx.Client
) -> None:
    ws, _ = probed
    for route in ("keys", "store_env"):
        assert inline.get(f"/dev/{APP}/try/{route}", params=query(ws)).json()["outcome"] == "none"
        answer = ws.invoke(APP, "try", path_parameters={"route": route}, query=query(ws))
        assert answer.json()["outcome"] == "none"


def test_the_worker_checks_keys_by_their_digest(probed: tuple[Workspace, BackgroundServer]) -> None:
    """A key the worker never held still opens what it guards (it holds the digest)."""
    ws, server = probed
    ws.create(APP, "locked", label="locked", method="GET", resource="locked", action="res.body='x'")
    ws.deploy(APP, "dev")
    server.sync()
    with httpx.Client(base_url=server.url, timeout=10) as client:
        assert client.get(f"/dev/{APP}/locked").status_code == 403
        right = client.get(f"/dev/{APP}/locked", headers={"x-api-key": ws.keys()["dev"]})
        assert right.status_code == 200 and right.text == "x"


def test_an_action_process_gets_the_code_of_its_own_application_only(
    tmp_path: Path,
) -> None:
    """The supervisor answers a code request of another application's version with a
    refusal: an action process binds to one application."""
    ws = Workspace(tmp_path / "home")
    for app in ("one", "two"):
        ws.create(app, "x", label="x", method="GET", resource="x", action=f"res.body = '{app}'")
        ws.deploy(app, "dev")
    from notebook_kit.runtime.reload.feed import Feed

    feed = Feed(ws)
    read = feed.read()
    versions = {app: deps["versions"][0] for app, deps in _by_app(read).items()}
    assert feed.definition(versions["one"], "one") is not None
    assert feed.definition(versions["two"], "one") is None
    assert json.dumps(feed.definition(versions["two"], "two"))


def _by_app(read: object) -> dict[str, dict[str, list[int]]]:
    live = {row[2]: row[1] for row in read.live}  # type: ignore[attr-defined]
    return {live[d]: head for d, head in read.deployments.items()}  # type: ignore[attr-defined]

"""The workspace store is out of an action's reach by every route the store guard knows,
checked by file identity, not by name; and the server keeps its hold on the store (it
follows key rotations and deploys) after an action tried. Real ``notebook-kit serve``
processes, real SQLite files, real HTTP (docs/trust-model.md)."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from conftest import run_cli
from polling import wait_until

from notebook_kit.runtime.server import BackgroundServer, ServerHandle, ServerProcess
from notebook_kit.workspace.workspace import Workspace

APP = "intruder"

# One action, one route to the store per ``how``; it answers what it read or why it failed.
PROBE = """\
import os, sqlite3
home = str(db.path.parent)
store = home + "/workspace.sqlite3"
how = req.queryStringParameters["how"]
plant = req.queryStringParameters.get("plant")


def keys(conn, schema="main"):
    if plant:
        conn.execute(f"UPDATE {schema}.api_keys SET key = ? WHERE stage = 'dev'", (plant,))
        conn.commit()
    return str(conn.execute(f"SELECT stage, key FROM {schema}.api_keys").fetchall())


def another_name(kind):  # made beforehand by the test (making them is refused too)
    return home + "/files/" + kind


def server_fd():
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink("/proc/self/fd/" + fd) == os.path.realpath(store):
                return "/proc/self/fd/" + fd
        except OSError:
            pass
    raise LookupError("no descriptor of the store")


def opened(name):
    if req.queryStringParameters.get("open") == "file":
        with open(name, "rb") as handle:
            return str(handle.read(100))
    return keys(sqlite3.connect(name))


try:
    if how == "attach":
        conn = sqlite3.connect(":memory:")
        conn.execute("ATTACH DATABASE ? AS s", (store,))
        res.body = "read " + keys(conn, "s")
    elif how == "attach-no-authorizer":
        conn = sqlite3.connect("file::memory:", uri=True)  # ATTACH reads URIs too
        conn.set_authorizer(None)
        conn.execute(f"ATTACH DATABASE 'file:{store}?mode=ro' AS s")
        res.body = "read " + keys(conn, "s")
    elif how == "uri":
        res.body = "read " + keys(sqlite3.connect("file:" + store + "?mode=ro", uri=True))
    elif how == "db-connection":
        conn = db._local.conn or db._threads.connection()
        conn.set_authorizer(None)
        conn.execute("ATTACH DATABASE ? AS s", (store,))
        res.body = "read " + keys(conn, "s")
    elif how in ("symlink", "hardlink"):
        res.body = "read " + opened(another_name(how))
    elif how == "proc-fd":
        res.body = "read " + opened(server_fd())
    elif how == "dir-fd":  # a name relative to a directory descriptor
        folder = os.open(home + "/files", os.O_RDONLY)
        res.body = "read " + str(os.read(os.open("hardlink", os.O_RDONLY, dir_fd=folder), 100))
    elif how == "truncate":
        os.truncate(store, 0)
        res.body = "read truncated"
    elif how == "remove":
        os.remove(store)
        res.body = "read removed"
    elif how == "rename":
        os.rename(store, store + ".moved")
        res.body = "read renamed"
    elif how == "replace":
        os.makedirs(home + "/files", exist_ok=True)
        with open(home + "/files/decoy", "wb") as decoy:
            decoy.write(b"decoy")
        os.replace(home + "/files/decoy", store)
        res.body = "read replaced"
    elif how == "link":
        os.makedirs(home + "/files", exist_ok=True)
        os.link(store, home + "/files/another")
        res.body = "read linked"
    elif how == "drop-locks":  # close a copy of each of the server's own descriptors
        dropped = []
        for fd in os.listdir("/proc/self/fd"):
            try:
                target = os.readlink("/proc/self/fd/" + fd)
            except OSError:
                continue
            if target.startswith(os.path.realpath(store)):
                os.close(os.dup(int(fd)))
                dropped.append(target.rsplit("/", 1)[1])
        res.body = "dropped " + " ".join(sorted(dropped))
    else:
        res.body = "unknown route"
except Exception as exc:
    res.body = f"refused: {type(exc).__name__}: {exc}"
"""


def deploy_probe(workspace: Workspace) -> None:
    workspace.create(
        APP,
        "probe",
        label="probe",
        method="GET",
        resource="probe",
        action=PROBE,
        requires_auth=False,
    )
    workspace.deploy(APP, "dev")


def release(workspace: Workspace) -> None:
    """Close this (test) process's connection to the store: another process holding it
    open would keep its WAL alive and hide a server that lost its locks."""
    workspace.store._db.close()  # type: ignore[attr-defined]


@pytest.fixture
def served(sample_workspace: Workspace) -> Iterator[ServerProcess]:
    deploy_probe(sample_workspace)
    release(sample_workspace)
    server = ServerProcess(sample_workspace.home).start()
    yield server
    server.stop()


def probe(server: ServerHandle, **params: str) -> str:
    answer = httpx.get(server.endpoint("dev", APP, "probe"), params=params, timeout=10)
    assert answer.status_code == 200, answer.text
    return answer.text


# What the guard's refusals say: the audit hook, SQLite's open check, an absent attribute.
REFUSALS = (
    "the workspace store (",
    "authorization denied",
    "unable to open database",
    "AttributeError: 'Database' object has no attribute",
)


def assert_refused(text: str, home: Path) -> None:
    workspace = Workspace(home)
    keys = workspace.keys()
    release(workspace)
    assert text.startswith("refused: "), text
    assert any(reason in text for reason in REFUSALS), text
    assert keys["dev"] not in text and keys["prod"] not in text


def assert_follows_rotations_and_deploys(server: ServerHandle, home: Path, rotations: int) -> None:
    """Rotate the dev key ``rotations`` times and deploy once from other processes (each
    opens the store, changes it and closes it): the server follows every change."""
    secured = server.endpoint("dev", "restapi_sample", "employee/E001")
    followed = 0
    with httpx.Client(timeout=5) as client:
        for _ in range(rotations):
            run_cli("keys", "--rotate", "dev", home=home, check=True)
            listed = run_cli("keys", home=home, check=True).stdout.splitlines()
            key = next(line.split()[1] for line in listed if line.startswith("dev"))
            try:
                # following at all is the point here, not how fast (a loaded machine)
                wait_until(
                    lambda k=key: client.get(secured, headers={"x-api-key": k}).is_success,
                    within=3,
                )
                followed += 1
            except AssertionError:
                pass
        assert followed == rotations, f"the server followed {followed} of {rotations} rotations"
        workspace = Workspace(home)
        workspace.create(APP, "late", label="late", method="GET", resource="late",
                         action='res.body = "late"', requires_auth=False)  # fmt: skip
        workspace.deploy(APP, "dev")
        release(workspace)
        late = server.endpoint("dev", APP, "late")
        wait_until(lambda: client.get(late).text == "late", within=3)


# -- a private connection: ATTACH, a file: URI, no authorizer ----------------------------------


def test_private_connection_cannot_attach_the_store(served: ServerProcess) -> None:
    assert_refused(probe(served, how="attach"), served.home)


def test_private_connection_without_authorizer_cannot_attach_the_store(
    served: ServerProcess,
) -> None:
    assert_refused(probe(served, how="attach-no-authorizer"), served.home)


def test_read_only_uri_connection_cannot_open_the_store(served: ServerProcess) -> None:
    assert_refused(probe(served, how="uri"), served.home)


def test_planted_key_through_attach_is_never_accepted(served: ServerProcess) -> None:
    planted = "P" * 40
    assert_refused(probe(served, how="attach", plant=planted), served.home)
    assert Workspace(served.home).keys()["dev"] != planted
    secured = served.endpoint("dev", "restapi_sample", "employee/E001")
    assert httpx.get(secured, headers={"x-api-key": planted}).status_code == 403


# -- db hands out no connection ------------------------------------------------------------------


def test_db_has_no_private_attribute_that_yields_its_connection(served: ServerProcess) -> None:
    text = probe(served, how="db-connection")
    assert_refused(text, served.home)
    assert "AttributeError" in text


def test_nothing_reachable_from_db_is_a_connection(workspace: Workspace) -> None:
    db = workspace.database
    db.execute("CREATE TABLE IF NOT EXISTS t (x)")  # this thread's connection is open
    with db.transaction() as inside:
        inside.execute("INSERT INTO t VALUES (1)")
        reachable = [db, db.transaction(), *(getattr(db, n) for n in dir(db) if n[:2] != "__")]
        leaks = []
        for obj in reachable:
            for name in dir(obj):
                if name.startswith("__"):
                    continue
                value = getattr(obj, name, None)
                nested = [getattr(value, n, None) for n in dir(value) if not n.startswith("__")]
                if any(isinstance(v, sqlite3.Connection) for v in (value, *nested)):
                    leaks.append(f"{type(obj).__name__}.{name}")
        assert leaks == []
    assert db.query("SELECT count(*) AS n FROM t") == [{"n": 1}]


# -- the store under another name -----------------------------------------------------------------


def other_names(home: Path) -> None:
    """A symlink and a hard link to the store in the files folder, made outside the server."""
    files = home / "files"
    files.mkdir(mode=0o700, exist_ok=True)
    os.symlink(home / "workspace.sqlite3", files / "symlink")
    os.link(home / "workspace.sqlite3", files / "hardlink")


@pytest.mark.parametrize("how", ["symlink", "hardlink", "proc-fd", "dir-fd"])
@pytest.mark.parametrize("kind", ["sqlite", "file"])
def test_store_under_another_name_is_refused_and_the_server_keeps_its_hold(
    served: ServerProcess, how: str, kind: str
) -> None:
    if how == "dir-fd" and kind == "sqlite":
        pytest.skip("SQLite opens by path only")
    other_names(served.home)
    for _ in range(3):  # open and close it again and again: the locks would be long gone
        assert_refused(probe(served, how=how, open=kind), served.home)
    assert_follows_rotations_and_deploys(served, served.home, rotations=5)


@pytest.mark.parametrize("how", ["truncate", "remove", "rename", "replace", "link"])
def test_store_cannot_be_truncated_removed_renamed_replaced_or_linked(
    served: ServerProcess, how: str
) -> None:
    store = served.home / "workspace.sqlite3"
    before = store.stat()
    keys = Workspace(served.home).keys()
    assert_refused(probe(served, how=how), served.home)
    after = store.stat()
    assert (after.st_ino, after.st_size, after.st_nlink) == (before.st_ino, before.st_size, 1)
    workspace = Workspace(served.home)
    assert workspace.keys() == keys
    release(workspace)
    assert_follows_rotations_and_deploys(served, served.home, rotations=2)


def test_server_keeps_its_hold_after_an_action_dropped_its_locks(served: ServerProcess) -> None:
    # Closing a copy (os.dup) of the server's own descriptor opens nothing the guard could
    # see, yet drops every lock the process holds on the file: the server takes them back.
    dropped = probe(served, how="drop-locks")
    assert dropped.startswith("dropped workspace.sqlite3"), dropped
    assert "workspace.sqlite3-shm" in dropped
    assert_follows_rotations_and_deploys(served, served.home, rotations=5)


def _wake_ups(server: ServerProcess) -> int:
    """How often the server's threads have slept and woken (voluntary context switches)."""
    assert server.process is not None
    tasks = Path(f"/proc/{server.process.pid}/task").iterdir()
    return sum(
        int((task / "status").read_text().split("voluntary_ctxt_switches:")[1].split()[0])
        for task in tasks
    )


def test_locks_dropped_just_before_the_server_idles_are_taken_back(
    served: ServerProcess,
) -> None:
    # The lock keeper stops polling while nothing runs; it takes the locks once more first.
    dropped = probe(served, how="drop-locks")
    assert dropped.startswith("dropped workspace.sqlite3"), dropped
    time.sleep(2.0)  # the relay's monitor goes idle after a second without calls
    idle_from = _wake_ups(served)
    time.sleep(2.0)
    # The watch loop wakes four times a second; the lock keeper polling every 50 ms would
    # add forty more.
    assert _wake_ups(served) - idle_from <= 24
    assert_follows_rotations_and_deploys(served, served.home, rotations=3)


@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")
def test_the_main_process_of_several_workers_keeps_no_locks_busy(
    sample_workspace: Workspace,
) -> None:
    # It runs no action, so nothing there can drop its locks: its keeper takes them once
    # and waits (it re-took them every 50 ms, forever: two fcntl calls each time).
    release(sample_workspace)
    with ServerProcess(sample_workspace.home, workers=2).start() as server:
        assert server.process is not None
        time.sleep(1.0)
        run = subprocess.run(
            ["timeout", "2", "strace", "-f", "-e", "trace=fcntl", "-p", str(server.process.pid)],
            capture_output=True, text=True, timeout=30,
        )  # fmt: skip
    assert "attached" in run.stderr, run.stderr
    assert run.stderr.count("F_SETLK") <= 4, run.stderr  # about 80 while it polled


# -- the file built-ins: no hard link, nothing that is the store ----------------------------------


LINK = 'res.body = fn.getPresignedUrl(req.queryStringParameters["path"])'
GET = 'res.body = str(fn.getFile(req.queryStringParameters["path"])["size"])'


def test_presigned_link_to_a_hard_link_of_the_store_serves_nothing(
    sample_workspace: Workspace,
) -> None:
    home = sample_workspace.home
    store = home / "workspace.sqlite3"
    for name, action in (("link", LINK), ("get", GET)):
        sample_workspace.create(APP, name, label=name, method="GET", resource=name,
                                action=action, requires_auth=False)  # fmt: skip
    sample_workspace.deploy(APP, "dev")
    fn = sample_workspace.action_env()["fn"]
    fn.putFile("x.bin", {"content": "harmless"})
    release(sample_workspace)
    with ServerProcess(home).start() as server, httpx.Client(timeout=5) as client:
        signed = client.get(server.endpoint("dev", APP, "link"), params={"path": "x.bin"}).text
        assert client.get(signed).text == "harmless"
        files = home / "files"
        os.link(store, files / ".x.tmp")
        os.replace(files / ".x.tmp", files / "x.bin")  # the signed name is the store now
        served = client.get(signed)
        assert served.status_code == 400
        assert b"SQLite format" not in served.content
        assert "hard links" in served.json()["message"]
        fresh = client.get(server.endpoint("dev", APP, "link"), params={"path": "x.bin"})
        assert fresh.status_code == 500 and "hard links" in fresh.json()["error"]
        got = client.get(server.endpoint("dev", APP, "get"), params={"path": "x.bin"})
        assert got.status_code == 500 and "hard links" in got.json()["error"]
        assert_follows_rotations_and_deploys(server, home, rotations=2)


# -- a notebook kernel: action code is refused, the notebook's own code is not ----------------


def test_in_kernel_server_refuses_actions_only(sample_workspace: Workspace) -> None:
    deploy_probe(sample_workspace)
    store = sample_workspace.home / "workspace.sqlite3"
    with BackgroundServer(sample_workspace) as server:
        for how in ("attach", "attach-no-authorizer", "uri", "hardlink"):
            assert_refused(probe(server, how=how), sample_workspace.home)
    conn = sqlite3.connect(":memory:")  # this is the notebook's code, not an action
    conn.execute("ATTACH DATABASE ? AS s", (str(store),))
    assert conn.execute("SELECT count(*) FROM s.api_keys").fetchone() == (2,)
    conn.close()


# -- the production setup: two workers ------------------------------------------------------------


def test_two_workers_refuse_the_store_and_keep_their_hold(sample_workspace: Workspace) -> None:
    deploy_probe(sample_workspace)
    release(sample_workspace)
    with ServerProcess(sample_workspace.home, workers=2).start() as server:
        for _ in range(4):  # the calls land on either worker
            assert_refused(probe(server, how="attach"), server.home)
            assert probe(server, how="drop-locks").startswith("dropped workspace.sqlite3")
        assert_follows_rotations_and_deploys(server, server.home, rotations=5)

"""The many-node recipe of docs/front-door.md works as written, and a node killed with
SIGKILL under load costs no GET through either front door.

The blocks marked ``<!-- recipe: NAME -->`` run in order, each user's in one bash: the
PostgreSQL server and the front doors (nginx, HAProxy) as an unprivileged user (as root:
the ``postgres`` system user, as ``support.pg`` does), the notebook-kit commands as the
test's own user (this environment's interpreter may not be readable by another). The
recipe's fixed ports are swapped for free ones, in the blocks and in the copies of the
``deploy/`` files they read. Then a few client threads call the employee lookup through
HAProxy and through nginx while a POST thread calls the calculator through each; one
node is killed with SIGKILL (its whole process group) and the load goes on. Every GET
answers 200; the POSTs lost and the request-log entries lost are measured, and bounded
loosely (docs/deployments.md records the figures).
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
from support.processes import free_port

from notebook_kit.domain.sample import EMPLOYEES
from notebook_kit.workspace.workspace import Workspace

pytestmark = pytest.mark.serial  # counts failures under load: run alone (scripts/test.sh)

REPO = Path(__file__).resolve().parents[3]
DOC = REPO / "docs" / "front-door.md"
BLOCK = re.compile(r"^( *)<!-- recipe: (\w+) -->\n\1```bash\n(.*?)^\1```$", re.M | re.S)
PORTS = re.compile(r"\b(5433|8000|8001|8002|8080|9101|9102)\b")
UNPRIVILEGED = ("postgres", "proxies")  # run as a user of no privilege
SEPARATOR = "@@@ the check block"
BEFORE_KILL, AFTER_KILL = 2.5, 5.0  # seconds of load


def recipe_blocks() -> dict[str, tuple[list[str], list[str]]]:
    """The marked blocks in order: name -> (code lines, expected output lines)."""
    found: dict[str, tuple[list[str], list[str]]] = {}
    for indent, name, text in BLOCK.findall(DOC.read_text()):
        code, expected = [], []
        for line in text.splitlines():
            line = line.removeprefix(indent)
            (expected if line.startswith("# ") else code).append(line.removeprefix("# "))
        found[name] = (code, expected)
    return found


def test_the_recipe_marks_its_blocks_in_order() -> None:
    assert list(recipe_blocks()) == ["env", "postgres", "proxies", "nodes", "check"]
    for name, (code, _) in recipe_blocks().items():
        assert not any("sudo" in line for line in code), name


@dataclass
class Recipe:
    """What the blocks made: the front doors, the nodes' homes, the store's URL."""

    nk: Path
    ports: dict[str, int]
    check_output: list[str]
    store: str

    def url(self, port: str) -> str:
        return f"http://127.0.0.1:{self.ports[port]}"


def _user() -> tuple[list[str], int | None, int | None]:
    """How to run a command as an unprivileged user: a prefix, and its uid/gid."""
    if os.geteuid() != 0:
        return [], None, None
    try:
        user = pwd.getpwnam("postgres")
    except KeyError:
        pytest.skip("running as root and there is no 'postgres' user to run the recipe as")
    runuser = shutil.which("runuser", path="/usr/sbin:/sbin:/usr/bin:/bin") or "runuser"
    return [runuser, "-u", "postgres", "--"], user.pw_uid, user.pw_gid


def _run(prefix: list[str], script: str, env: dict[str, str], cwd: Path) -> str:
    done = subprocess.run(
        [*prefix, "bash", "-e", "-o", "pipefail", "-c", script],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, f"{script}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
    return done.stdout


def _stop_all(nk: Path) -> None:
    """Kill what the recipe started, by the process IDs it recorded."""
    pids = []
    for record in (nk / "haproxy.pid", nk / "nginx" / "nginx.pid", nk / "pg" / "postmaster.pid"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            pids.append(int(record.read_text().split()[0]))
    for record in nk.glob("node*/serve-*.pid"):
        with contextlib.suppress(OSError, ValueError, KeyError):
            pid = json.loads(record.read_text())["pid"]
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGQUIT if pid == pids[-1] else signal.SIGTERM)


@pytest.fixture(scope="module")
def recipe() -> Iterator[Recipe]:
    for binary in ("/usr/sbin/nginx", "/usr/sbin/haproxy", "/usr/bin/curl"):
        if not os.path.exists(binary):
            pytest.skip(f"{binary} is missing (scripts/test.sh installs Debian's packages)")
    if not list(Path("/usr/lib/postgresql").glob("*/bin/initdb")):
        pytest.skip("PostgreSQL's binaries are missing (apt-get install postgresql)")
    prefix, uid, gid = _user()
    # not under pytest's own temp directory: that one is its user's alone
    root = Path(tempfile.mkdtemp(prefix="notebook-kit-recipe-"))
    home, work = root / "home", root / "work"
    ports = {p: free_port() for p in ("5433", "8000", "8001", "8002", "8080", "9101", "9102")}

    def local(text: str) -> str:
        return PORTS.sub(lambda m: str(ports[m.group(1)]), text)

    for path in ("deploy/nginx/notebook-kit.conf", "deploy/haproxy/notebook-kit.cfg"):
        (work / path).parent.mkdir(parents=True, exist_ok=True)
        (work / path).write_text(local((REPO / path).read_text()))
    (home / "nk").mkdir(parents=True)
    if uid is not None:
        for path in (root, home, home / "nk", work):
            os.chown(path, uid, gid)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NOTEBOOK_KIT_", "PG"))}
    env.update(
        HOME=str(home),
        VIRTUAL_ENV=sys.prefix,
        PATH=f"{Path(sys.prefix) / 'bin'}{os.pathsep}/usr/bin:/bin",
    )
    if prefix:  # runuser sets HOME to the user's own: this one instead
        prefix = [*prefix, "env", f"HOME={home}", f"PATH={env['PATH']}"]
    blocks = {name: "\n".join(code) for name, (code, _) in recipe_blocks().items()}
    nk = home / "nk"
    try:
        as_user = "\n".join(blocks[name] for name in ("env", *UNPRIVILEGED))
        _run(prefix, local(as_user), env, work)
        separated = (blocks["env"], blocks["nodes"], f"echo {SEPARATOR}", blocks["check"])
        output = _run([], local("\n".join(separated)), env, work).split(f"{SEPARATOR}\n")[1]
        store = local("postgresql://nk:secret@127.0.0.1:5433/apis")
        assert (nk / "nk.env").read_text().strip() == f"NOTEBOOK_KIT_STORE={store}"
        assert (nk / "nk.env").stat().st_mode & 0o777 == 0o600
        yield Recipe(nk, ports, output.splitlines(), store)
    finally:
        _stop_all(nk)
        time.sleep(0.5)  # the servers' last writes in their directories
        shutil.rmtree(root, ignore_errors=True)


def test_the_employee_lookup_answers_on_every_node_and_through_both_front_doors(
    recipe: Recipe,
) -> None:
    _, expected = recipe_blocks()["check"]
    e001 = json.dumps(dict(zip(("id", "name", "age"), EMPLOYEES[0], strict=True)))
    assert expected == [e001] * 4
    assert recipe.check_output == expected


@dataclass
class Calls:
    """Client threads calling one URL back to back until stopped."""

    url: str
    headers: dict[str, str]
    body: bytes | None = None
    threads: int = 2
    answered: int = 0
    failures: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _workers: list[threading.Thread] = field(default_factory=list)

    def start(self) -> Calls:
        for _ in range(self.threads):
            thread = threading.Thread(target=self._run, daemon=True)
            thread.start()
            self._workers.append(thread)
        return self

    def _run(self) -> None:
        method = "GET" if self.body is None else "POST"
        with httpx.Client(headers=self.headers, timeout=15) as client:
            while not self._stop.is_set():
                try:
                    response = client.request(method, self.url, content=self.body)
                except httpx.HTTPError as exc:
                    self.failures.append(f"{type(exc).__name__}: {exc}")
                    continue
                self.answered += 1  # the proxy answered: a node did, unless the status says not
                if response.status_code != 200:
                    self.failures.append(f"{response.status_code} {response.text[:120]}")

    def stop(self) -> None:
        self._stop.set()
        for thread in self._workers:
            thread.join(20)


def test_a_node_killed_under_load_fails_no_get_through_either_front_door(
    recipe: Recipe,
) -> None:
    cli = Workspace(recipe.nk / "cli", store=recipe.store)
    key = {"x-api-key": cli.keys()["dev"]}
    lookup, calc = "/dev/restapi_sample/employee/E002", "/dev/restapi_sample/calculator"
    body = b'{"arg1": 1, "arg2": 2, "operation": "plus"}'
    loads = {
        door: [
            Calls(recipe.url(port) + lookup, key, threads=3),
            Calls(recipe.url(port) + calc, key, body=body, threads=1),
        ]
        for door, port in (("haproxy", "8080"), ("nginx", "8000"))
    }
    for calls in loads.values():
        for load in calls:
            load.start()
    time.sleep(BEFORE_KILL)
    record = next((recipe.nk / "node1").glob("serve-*.pid"))
    os.killpg(json.loads(record.read_text())["pid"], signal.SIGKILL)
    time.sleep(AFTER_KILL)
    with pytest.raises(httpx.ConnectError):  # the node is gone: its port refuses
        httpx.get(recipe.url("8001"), timeout=2)
    for calls in loads.values():
        for load in calls:
            load.stop()
    time.sleep(1.0)  # the surviving node's log buffers flush within half a second
    logged = [e for e in cli.request_log() if e["path"] in (lookup, calc)]
    answered = sum(load.answered - len(load.failures) for calls in loads.values() for load in calls)
    figures = {
        door: {
            "gets": gets.answered,
            "failed_gets": len(gets.failures),
            "posts": posts.answered,
            "failed_posts": len(posts.failures),
        }
        for door, (gets, posts) in loads.items()
    }
    figures["log"] = {"answered_200": answered, "logged": len(logged)}
    print("recipe figures:", json.dumps(figures))  # docs/deployments.md quotes these
    for door, (gets, _) in loads.items():
        assert gets.answered > 50, (door, figures)
        assert gets.failures == [], (door, gets.failures[:5])
    for _, posts in loads.values():
        assert len(posts.failures) <= 5, posts.failures  # at most the few in flight at the kill
    # What the killed node answered in its last half second may be lost, nothing else.
    # The difference is net: a call the node logged as answered but whose answer the
    # proxy never got (it retried the GET elsewhere, or answered the POST 502) counts
    # the other way, so a few more rows than answers is possible too.
    assert -5 <= answered - len(logged) <= answered * 0.25, figures

"""Fast actions run inline on the event loop, after the loop's next turn; those that wait
on the network, and those not (or no longer) proven fast, on the lanes.

A real ``notebook-kit serve`` over real HTTP: an action's answer says which thread ran it
(the loop is the server's main thread with one worker; lanes are ``relay-lane``). Plus the
``Pace`` rules themselves, the order of two calls read in the same turn of the loop, and
the relay's monitor going idle when nothing runs.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from polling import wait_until
from test_stalls import calculator_latencies  # the same sequential calls, timed

from notebook_kit.domain.models import Constant
from notebook_kit.runtime.application import create_app
from notebook_kit.runtime.http_guard import GuardedRequest
from notebook_kit.runtime.pace import (
    MAX_BACKOFF,
    PROMOTE_AFTER,
    Pace,
    local_db,
    pace_for,
    reads_names,
)
from notebook_kit.runtime.relay import TIMED_OUT, Relay
from notebook_kit.runtime.server import ServerProcess
from notebook_kit.workspace.workspace import Workspace

APP = "pace"
# Reads the database (so it may run inline); fast until a flag file exists, then it does
# what the flag file says.
TURNS = """\
import os, threading, time
db.query("SELECT 1 AS one")
flag = const.FLAG
mode = open(flag).read() if os.path.exists(flag) else ""
if mode == "sleep":
    time.sleep(0.4)
elif mode == "nap":
    time.sleep(0.001)
elif mode == "spin":
    while True:
        pass
res.body = {"thread": threading.current_thread().name}
"""


@pytest.fixture(scope="module")
def pace_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("pace") / "workspace"
    workspace = Workspace(home)
    workspace.install_sample()
    for name in ("turns", "spins"):
        flag = home / f"{name}.flag"
        workspace.create(
            APP,
            name,
            label=name,
            method="GET",
            resource=name,
            action=TURNS,
            requires_auth=False,
            constants=[Constant("FLAG", "String", str(flag))],
        )
    workspace.edit(APP, "spins", timeout=1)
    workspace.create(
        APP,
        "pure",
        label="pure Python",
        method="GET",
        resource="pure",
        action='import threading\nres.body = {"thread": threading.current_thread().name}\n',
        requires_auth=False,
    )
    workspace.deploy(APP, "dev")
    return home


@pytest.fixture
def server(pace_home: Path) -> Iterator[ServerProcess]:
    for flag in pace_home.glob("*.flag"):
        flag.unlink()
    process = ServerProcess(pace_home).start()
    yield process
    process.stop()


def threads_seen(client: httpx.Client, path: str, calls: int) -> list[str]:
    names = []
    for _ in range(calls):
        answer = client.get(path)
        assert answer.status_code == 200, answer.text
        names.append(answer.json()["thread"])
    return names


def promote(client: httpx.Client, path: str) -> None:
    """Call ``path`` until it answers from the loop thread (the server's main thread)."""
    names = threads_seen(client, path, PROMOTE_AFTER + 8)
    assert names[0] == "relay-lane", names  # every action starts on the lanes
    assert names[-1] == "MainThread", names


def test_a_fast_action_moves_from_the_lanes_to_the_loop(server: ServerProcess) -> None:
    with httpx.Client(base_url=server.url, timeout=10) as client:
        names = threads_seen(client, f"/dev/{APP}/turns", PROMOTE_AFTER + 8)
    assert names[:PROMOTE_AFTER] == ["relay-lane"] * PROMOTE_AFTER
    assert names[-4:] == ["MainThread"] * 4


def test_a_fast_pure_python_action_moves_to_the_loop_too(server: ServerProcess) -> None:
    with httpx.Client(base_url=server.url, timeout=10) as client:
        names = threads_seen(client, f"/dev/{APP}/pure", PROMOTE_AFTER + 8)
    assert names[:PROMOTE_AFTER] == ["relay-lane"] * PROMOTE_AFTER
    assert names[-4:] == ["MainThread"] * 4


def test_calls_read_in_one_turn_are_all_routed_before_their_inline_actions_run(
    tmp_path: Path,
) -> None:
    # Two calls that arrive together: the second is read and routed (its log entry's
    # start) before the first one's action runs (the time the action saw).
    workspace = Workspace(tmp_path / "workspace")
    stamp = "import threading, time\n"
    stamp += 'res.body = {"ran": time.perf_counter(), "thread": threading.current_thread().name}'
    workspace.create(
        APP, "stamp", label="stamp", method="GET", resource="stamp", action=stamp,
        requires_auth=False,
    )  # fmt: skip
    workspace.deploy(APP, "dev")
    app = create_app(workspace, name="notebook_kit_turns", touchup=False)
    runtime = app.ctx.runtime

    async def calls() -> tuple[list[dict], list[tuple]]:
        runtime.relay = Relay(asyncio.get_running_loop())
        try:

            def call() -> object:
                request = GuardedRequest(b"/dev/pace/stamp", {"host": "h"}, "1.1", "GET", None, app)
                return runtime.handle(request)

            for _ in range(PROMOTE_AFTER):  # proven on the lanes
                await call()
            answers = await asyncio.gather(call(), call())
            return [json.loads(a.body) for a in answers], runtime._pending_log[-2:]
        finally:
            runtime.relay.close()

    try:
        (first, second), (first_entry, second_entry) = asyncio.run(calls())
    finally:
        app.unregister_app(app)
    assert first["thread"] == second["thread"] == "MainThread"  # both inline
    assert first_entry[0] < second_entry[0] < first["ran"] < second["ran"]


def test_an_action_that_turns_slow_goes_back_to_the_lanes(
    server: ServerProcess, pace_home: Path
) -> None:
    key = Workspace(pace_home).keys()["dev"]
    path = f"/dev/{APP}/turns"
    with httpx.Client(base_url=server.url, timeout=10) as client:
        promote(client, path)
        (pace_home / "turns.flag").write_text("sleep")
        # The call that shows it is slow runs inline (it was fast until now) ...
        assert client.get(path).json()["thread"] == "MainThread"
        # ... and the next ones on a lane, where they stall nothing.
        assert client.get(path).json()["thread"] == "relay-lane"
        with ThreadPoolExecutor(1) as pool:
            slow = pool.submit(client.get, path)
            time.sleep(0.05)
            latencies = calculator_latencies(server.url, key, 0.3)
            assert slow.result().json()["thread"] == "relay-lane"
    # A sleep of 0.4 s on the loop would hold the first calculator call (made 0.05 s in)
    # for 0.35 s at least.
    assert max(latencies) < 0.3, [round(x, 3) for x in latencies]


def test_an_inline_call_that_sleeps_at_all_sends_its_action_back(
    server: ServerProcess, pace_home: Path
) -> None:
    # A millisecond is too short for the monitor to see, but it held the loop: the sleep
    # itself is the sign (the machine preempting the loop thread is not, so CPU time
    # rather than wall time decides the sampled calls).
    path = f"/dev/{APP}/turns"
    with httpx.Client(base_url=server.url, timeout=10) as client:
        promote(client, path)
        (pace_home / "turns.flag").write_text("nap")
        assert client.get(path).json()["thread"] == "MainThread"
        assert client.get(path).json()["thread"] == "relay-lane"


def test_an_inline_action_past_its_limit_gets_504_and_the_server_goes_on(
    server: ServerProcess, pace_home: Path
) -> None:
    path = f"/dev/{APP}/spins"
    with httpx.Client(base_url=server.url, timeout=10) as client:
        promote(client, path)
        (pace_home / "spins.flag").write_text("spin")
        began = time.monotonic()
        answer = client.get(path)
        assert answer.status_code == 504, answer.text
        assert time.monotonic() - began < 5
        (pace_home / "spins.flag").unlink()
        # The loop is free again, and the action was sent back to the lanes.
        assert client.get(path).json()["thread"] == "relay-lane"
        assert client.get(f"/dev/{APP}/turns").status_code == 200


def test_names_that_make_an_action_read_the_local_database() -> None:
    names = frozenset(("db",))
    local = local_db({"database_url": ""})
    namespace: dict = {"db": object()}
    exec(
        "def helper():\n    return db.query('SELECT 1')\n"
        "def uses_helper():\n    return [helper() for _ in range(1)]\n"
        "def plain():\n    return 1 + 1\n"
        "def direct():\n    return db\n",
        namespace,
    )
    assert reads_names(namespace["direct"], names)
    assert reads_names(namespace["uses_helper"], names)  # through a user function
    assert not reads_names(namespace["plain"], names)
    exec("def fetches():\n    return db.query('SELECT 1') + [http.get('u')]\n", namespace)
    assert not pace_for(namespace["fetches"], local).eligible  # the network
    assert pace_for(namespace["uses_helper"], local).eligible  # inline once proven
    assert local and local_db({"database_url": "sqlite:///x.db"})
    # a database over the network would hold the loop for a round trip per statement
    assert not local_db({"database_url": "postgresql+psycopg://h/db"})


def test_each_kind_of_action_gets_its_pace() -> None:
    local = local_db({"database_url": ""})
    namespace: dict = {"db": object()}
    exec(
        "def reads():\n    return db.query('SELECT 1')\n"
        "def pure():\n    return 1 + 1\n"
        "def fetches():\n    return http.get('u')\n",
        namespace,
    )
    reader, pure, fetcher = (pace_for(namespace[n], local) for n in ("reads", "pure", "fetches"))
    assert reader.eligible and pure.eligible  # inline once proven
    assert not fetcher.eligible
    remote = local_db({"database_url": "postgresql+psycopg://h/db"})
    assert not pace_for(namespace["reads"], remote).eligible  # db over the net
    assert pace_for(namespace["pure"], remote).eligible


def test_pace_promotes_after_a_run_of_fast_lane_calls() -> None:
    pace = Pace()
    ineligible = Pace(eligible=False)
    for _ in range(PROMOTE_AFTER * 4):
        ineligible.lane_call_ended(0.0001)
    assert not ineligible.inline
    for _ in range(PROMOTE_AFTER - 1):
        pace.lane_call_ended(0.0001)
    assert not pace.inline
    pace.lane_call_ended(0.5)  # one slow call starts the run again
    for _ in range(PROMOTE_AFTER - 1):
        pace.lane_call_ended(0.0001)
    pace.lane_call_ended(0.001, waited=True)  # and so does one that slept
    for _ in range(PROMOTE_AFTER - 1):
        pace.lane_call_ended(0.0001)
    pace.lane_call_ended(0.05, cpu=0.01)  # or computed for longer than INLINE_MAX
    for _ in range(PROMOTE_AFTER - 1):
        pace.lane_call_ended(0.0001)
    assert not pace.inline
    pace.lane_call_ended(0.0001)
    assert pace.inline


def test_pace_demotion_doubles_the_run_needed_up_to_a_cap() -> None:
    pace = Pace()
    needed = []
    for _ in range(MAX_BACKOFF + 3):
        calls = 0
        while not pace.inline:
            pace.lane_call_ended(0.0001)
            calls += 1
        needed.append(calls)
        pace.demote()
    cap = PROMOTE_AFTER << MAX_BACKOFF
    assert needed == [min(PROMOTE_AFTER << i, cap) for i in range(MAX_BACKOFF + 3)]
    pace.demote()  # demoting what is on the lanes changes nothing
    assert pace.demotions == MAX_BACKOFF + 3


@pytest.fixture
def relay() -> Iterator[tuple[asyncio.AbstractEventLoop, Relay]]:
    loop = asyncio.new_event_loop()
    made: list[Relay] = []

    async def make() -> Relay:
        made.append(Relay(asyncio.get_running_loop(), idle_after=0.05))
        return made[0]

    relay = loop.run_until_complete(make())
    yield loop, relay
    relay.close()
    loop.close()


def test_the_monitor_sleeps_while_idle_and_wakes_for_the_next_call(
    relay: tuple[asyncio.AbstractEventLoop, Relay],
) -> None:
    loop, relay_ = relay
    wait_until(lambda: relay_.sleeping, 2)
    assert loop.run_until_complete(relay_.run(lambda: 42, (), 1.0)) == 42
    # A call made while it slept is watched: past its limit it is answered TIMED_OUT.
    stop = threading.Event()

    def hang() -> None:
        stop.wait(5)

    wait_until(lambda: relay_.sleeping, 2)
    began = time.monotonic()
    assert loop.run_until_complete(relay_.run(hang, (), 0.2)) is TIMED_OUT
    assert time.monotonic() - began < 2
    stop.set()
    wait_until(lambda: relay_.sleeping, 2)  # and idle again after


def test_an_inline_call_made_while_the_monitor_slept_is_stopped_at_its_limit(
    relay: tuple[asyncio.AbstractEventLoop, Relay],
) -> None:
    from notebook_kit.runtime.interrupts import ActionTimeout

    loop, relay_ = relay
    wait_until(lambda: relay_.sleeping, 2)
    pace = Pace()
    pace.inline = True

    def spin() -> None:
        while True:
            pass

    async def call() -> None:
        relay_.run_inline(spin, (), 0.2, pace)

    with pytest.raises(ActionTimeout):
        loop.run_until_complete(call())
    assert relay_.loop_lane.job is None
    assert not pace.inline  # sent back to the lanes

"""The front door (issue 10): two ``notebook-kit serve`` nodes behind a real nginx running
the shipped recipe ``deploy/nginx/notebook-kit.conf``. Redeploys from a third process and a
node stopped gracefully and restarted, all under load: no request fails, every answer comes
from a deployed revision, and a second after the last deploy every answer is the newest."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from support.front_door import RECIPE, Answer, FrontDoor, Load, render_recipe
from support.polling import wait_until
from support.processes import run_cli

from notebook_kit.runtime.process.handles import ServerProcess

APP = "front"
REDEPLOYS = 6
WORKERS = 2  # Sanic workers per node
DRAFT = 999  # saved after the last deploy and never deployed: never answered
SETTLE = 1.0  # the promise: live on every node within a second


@dataclass
class Cluster:
    home: Path
    nodes: list[ServerProcess]
    door: FrontDoor
    key: str

    def cli(self, *args: str) -> str:
        return run_cli(*args, home=self.home, check=True).stdout


@pytest.fixture(params=["sqlite", "postgresql"])
def cluster(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Cluster]:
    """Revision 0 of ``front`` deployed to dev, two nodes over one store, nginx in front of
    both. ``sqlite``: the nodes share one home (this machine); ``postgresql``: each node has
    its own home, and the CLI a third one, over one PostgreSQL database."""
    if request.param == "postgresql":
        # The nodes and the CLI are child processes: they inherit the store from here.
        monkeypatch.setenv("NOTEBOOK_KIT_STORE", request.getfixturevalue("fresh_database"))
        homes = [tmp_path / "cli", tmp_path / "node1", tmp_path / "node2"]
    else:
        monkeypatch.delenv("NOTEBOOK_KIT_STORE", raising=False)
        homes = [tmp_path / "home"] * 3
    for home in set(homes):
        home.mkdir()
    action = tmp_path / "rev.py"
    action.write_text('res.body = {"rev": const.REV}\n')
    create = ["create", APP, "rev", "--label", "Revision", "--method", "get"]
    create += ["--resource", "rev", "--action-file", str(action), "--const", "REV:Integer=0"]
    run_cli(*create, home=homes[0], check=True)
    run_cli("deploy", APP, "--stage", "dev", home=homes[0], check=True)
    keys = run_cli("keys", home=homes[0], check=True).stdout
    key = dict(line.split() for line in keys.splitlines() if line.strip())["dev"]
    nodes = [ServerProcess(home, workers=WORKERS) for home in homes[1:]]
    try:
        for node in nodes:
            node.start()
        with FrontDoor([node.port for node in nodes]) as door:
            yield Cluster(homes[0], nodes, door, key)
    finally:
        for node in nodes:
            node.stop()


def _revision(answer: Answer) -> int:
    return int(json.loads(answer.body)["rev"])


def _node(answer: Answer) -> str:
    """The node that answered (nginx lists every node it tried, the last one answered)."""
    return answer.upstream.split(",")[-1].strip()


@dataclass
class Restart:
    """One node stopped gracefully (SIGTERM) and started again, with the times of each step.
    Called on the test's main thread: the node dies with the thread that started it."""

    node: ServerProcess
    down_for: float = 0.5  # between the exit and the new start: only the other node serves
    stopped: float = 0.0
    starting: float = 0.0
    started: float = 0.0
    exit_code: int | None = None

    def __call__(self) -> None:
        self.node.stop()
        self.stopped = time.monotonic()
        assert self.node.process is not None
        self.exit_code = self.node.process.returncode
        time.sleep(self.down_for)
        self.starting = time.monotonic()  # the new process may listen any time after this
        self.node.start()
        self.started = time.monotonic()


def _redeploy(
    cluster: Cluster, deploys: list[tuple[int, float, float]], second: threading.Event
) -> None:
    """Save and deploy revisions 1 to REDEPLOYS, each through the CLI (a third process),
    recording when each deploy started and returned; ``second`` is set after revision 2."""
    for revision in range(1, REDEPLOYS + 1):
        cluster.cli("edit", APP, "rev", "--const", f"REV:Integer={revision}")
        started = time.monotonic()
        cluster.cli("deploy", APP, "--stage", "dev")
        deploys.append((revision, started, time.monotonic()))
        if revision == 2:
            second.set()
        time.sleep(0.3)


def test_redeploys_and_a_node_restart_under_load_lose_no_request(cluster: Cluster) -> None:
    load = Load(f"{cluster.door.url}/dev/{APP}/rev", {"x-api-key": cluster.key}).start()
    restart = Restart(cluster.nodes[0])
    deploys: list[tuple[int, float, float]] = [(0, float("-inf"), float("-inf"))]
    second = threading.Event()
    deployer = threading.Thread(target=_redeploy, args=(cluster, deploys, second))
    try:
        time.sleep(1.0)
        deployer.start()
        assert second.wait(60)
        restart()  # overlaps the next deploys
        deployer.join(120)
        assert len(deploys) == REDEPLOYS + 1
        cluster.cli("edit", APP, "rev", "--const", f"REV:Integer={DRAFT}")
        time.sleep(SETTLE + 1.0)
    finally:
        load.stop()
        deployer.join(120)

    assert load.failures == [], f"{len(load.failures)} failed: {load.failures[:5]}"
    answers = load.answers
    assert len(answers) > 100
    # Every answer is a deployed revision, never one deployed after it was received.
    for answer in answers:
        revision = _revision(answer)
        deployed = max(r for r, started, _ in deploys if started < answer.received)
        assert revision <= deployed, f"revision {revision} answered before its deploy"
    assert DRAFT not in {_revision(a) for a in answers}
    # No node goes backwards: a call sent after a node answered revision r gets r or newer
    # from that node (across nodes, the window of docs/front-door.md applies).
    for node in {_node(a) for a in answers}:
        mine = [a for a in answers if _node(a) == node]
        by_received = sorted(mine, key=lambda a: a.received)
        newest, done = 0, 0
        for answer in sorted(mine, key=lambda a: a.sent):
            while done < len(by_received) and by_received[done].received < answer.sent:
                newest = max(newest, _revision(by_received[done]))
                done += 1
            assert _revision(answer) >= newest, f"{node} went back to {_revision(answer)}"
    # A second after the last deploy returned, both nodes answer only the newest.
    last = deploys[-1][2]
    late = [a for a in answers if a.sent >= last + SETTLE]
    assert len(late) > 20
    assert {_revision(a) for a in late} == {REDEPLOYS}
    assert {_node(a) for a in late} == {f"127.0.0.1:{n.port}" for n in cluster.nodes}
    # The stopped node drained and exited cleanly; the other one answered meanwhile; the
    # restarted one answers again.
    assert restart.exit_code == 0
    stopped_node = f"127.0.0.1:{restart.node.port}"
    down = [a for a in answers if restart.stopped <= a.sent and a.received <= restart.starting]
    assert down and stopped_node not in {_node(a) for a in down}
    assert stopped_node in {_node(a) for a in answers if a.sent > restart.started}


def test_recipe_renders_one_upstream_line_per_node() -> None:
    rendered = render_recipe(RECIPE.read_text(), 9000, [9001, 9002, 9003])
    servers = [
        line.strip() for line in rendered.splitlines() if line.strip().startswith("server 1")
    ]
    assert servers == [
        f"server 127.0.0.1:{port} max_fails=1 fail_timeout=1s;" for port in (9001, 9002, 9003)
    ]
    assert "listen 127.0.0.1:9000;" in rendered


def test_a_node_stopped_mid_call_finishes_it(cluster: Cluster, tmp_path: Path) -> None:
    """SIGTERM drains: a POST (which nginx never resends once a node has it) in flight on
    the node being stopped is answered by that node, and the other one keeps answering."""
    slow = tmp_path / "slow.py"
    slow.write_text('import time\ntime.sleep(1.5)\nres.body = {"done": True}\n')
    create = ["create", APP, "slow", "--label", "Slow", "--method", "post", "--resource", "slow"]
    cluster.cli(*create, "--action-file", str(slow))
    cluster.cli("deploy", APP, "--stage", "dev")
    headers = {"x-api-key": cluster.key}
    with httpx.Client(headers=headers, timeout=10) as client:
        for node in cluster.nodes:  # both serve it (a GET is 405 there, not 404) first
            wait_until(lambda n=node: client.get(f"{n.url}/dev/{APP}/slow").status_code == 405)
        answers: list[httpx.Response] = []
        calls = [
            threading.Thread(
                target=lambda: answers.append(client.post(f"{cluster.door.url}/dev/{APP}/slow"))
            )
            for _ in cluster.nodes
        ]
        for call in calls:  # nginx takes turns: one call on each node
            call.start()
        time.sleep(0.5)
        stopped = cluster.nodes[0]
        stopped.stop()  # SIGTERM, waits for the exit
        for call in calls:
            call.join(15)
    assert stopped.process is not None and stopped.process.returncode == 0
    assert [a.status_code for a in answers] == [200, 200]
    assert all(a.json() == {"done": True} for a in answers)
    # each answered by the node it was sent to, the stopped one included: nothing resent
    assert sorted(a.headers["x-upstream"] for a in answers) == sorted(
        f"127.0.0.1:{node.port}" for node in cluster.nodes
    )

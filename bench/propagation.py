"""Deploy -> live latency across nodes: how long after a deploy returns every node answers it.

Starts ``--nodes`` ``notebook-kit serve`` processes over one store, for each store kind:

- ``sqlite``: the nodes share one workspace home (one SQLite file, this machine); each
  node polls the store every ``reload_interval`` (0.25 s by default).
- ``postgresql``: each node has its own home and ``NOTEBOOK_KIT_STORE`` names one
  PostgreSQL database (LISTEN/NOTIFY, polling as the fallback). ``--postgres URL`` uses a server you
  run; without it a throwaway server is started from Debian's binaries in a temp dir.

Then, from this process (a third one, as the CLI or a notebook would be), it saves and
deploys ``--deploys`` revisions of one definition, the store kinds taking turns, and after
each deploy polls every node directly until all of them answer the new revision. Prints
p50, p90 and max of that latency per store kind (from the deploy's return, and from its
start), and the deploy's own duration.

    python bench/propagation.py                          # 2 nodes, 30 deploys, both stores
    python bench/propagation.py --stores sqlite --nodes 4 --deploys 50
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import json
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from notebook_kit import Constant, Workspace

APP = "propagation"
ACTION = 'res.body = {"rev": const.REV}\n'


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def throwaway_postgres() -> Iterator[str]:
    """A PostgreSQL server from Debian's binaries in a temp dir (as the ``postgres`` user
    when run as root); yields its URL and removes everything at the end."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    if not found:
        sys.exit("PostgreSQL is not installed (apt-get install postgresql), or pass --postgres")
    bin_dir = os.path.dirname(found[-1])
    as_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    data = tempfile.mkdtemp(prefix="notebook-kit-bench-pg-")
    if os.geteuid() == 0:
        shutil.chown(data, "postgres", "postgres")
    pgdata, port = os.path.join(data, "data"), free_port()
    run = {"check": True, "capture_output": True, "timeout": 120, "cwd": data}
    try:
        subprocess.run(
            [*as_user, f"{bin_dir}/initdb", "-D", pgdata, "-U", "postgres", "-A", "trust"], **run
        )
        options = f"-p {port} -k {data} -c listen_addresses=127.0.0.1"
        log = os.path.join(data, "server.log")
        start = [f"{bin_dir}/pg_ctl", "-D", pgdata, "-l", log, "-o", options, "-w", "start"]
        subprocess.run([*as_user, *start], **run)
        try:
            yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
        finally:
            stop = [f"{bin_dir}/pg_ctl", "-D", pgdata, "-m", "fast", "-w", "stop"]
            subprocess.run([*as_user, *stop], **run)
    finally:
        shutil.rmtree(data, ignore_errors=True)


@dataclass
class Cluster:
    """``nodes`` serve processes over one store, and the deploying workspace."""

    kind: str
    root: Path
    store: str | None  # None: the SQLite file of the shared home
    nodes: int
    ports: list[int] = field(default_factory=list)
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    after_return: list[float] = field(default_factory=list)
    after_start: list[float] = field(default_factory=list)
    deploy_seconds: list[float] = field(default_factory=list)

    def workspace(self, home: Path) -> Workspace:
        return Workspace(home, store=self.store or "")  # "": the SQLite file, whatever the env

    def home(self, node: int) -> Path:
        """The home of ``node`` (-1: the deployer's): shared on SQLite, one each on PG."""
        return self.root / ("home" if self.store is None else f"home{node + 1}")

    def start(self) -> Cluster:
        self.ws = self.workspace(self.home(-1))
        self.ws.create(
            APP,
            "rev",
            label="Revision",
            method="get",
            resource="rev",
            action=ACTION,
            requires_auth=False,
            constants=[Constant.from_text("REV:Integer=0")],
        )
        self.ws.deploy(APP, "dev")
        for node in range(self.nodes):
            port = free_port()
            home = str(self.home(node))
            command = [sys.executable, "-m", "notebook_kit", "--home", home, "--create"]
            command += ["serve", "--port", str(port)]
            self.ports.append(port)
            # the store in the environment, so its password shows on no command line
            env = {k: v for k, v in os.environ.items() if k != "NOTEBOOK_KIT_STORE"}
            if self.store is not None:
                env["NOTEBOOK_KIT_STORE"] = self.store
            self.processes.append(
                subprocess.Popen(
                    command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
                )
            )
        self.clients = [httpx.Client(base_url=f"http://127.0.0.1:{p}") for p in self.ports]
        deadline = time.monotonic() + 60
        while not all(self._answers(c, 0) for c in self.clients):
            if time.monotonic() > deadline or any(p.poll() is not None for p in self.processes):
                raise SystemExit(f"{self.kind}: the nodes did not start")
            time.sleep(0.1)
        return self

    @staticmethod
    def _answers(client: httpx.Client, revision: int) -> bool:
        try:
            response = client.get(f"/dev/{APP}/rev")
        except httpx.HTTPError:
            return False
        return response.status_code == 200 and json.loads(response.text)["rev"] == revision

    def _live_after(self, client: httpx.Client, revision: int, timeout: float = 30) -> float:
        deadline = time.perf_counter() + timeout
        while not self._answers(client, revision):
            if time.perf_counter() > deadline:
                raise SystemExit(f"{self.kind}: revision {revision} not live in {timeout} s")
            time.sleep(0.001)
        return time.perf_counter()

    def measure(self, revision: int, pool: ThreadPoolExecutor) -> None:
        """Save ``revision`` (untimed), deploy it, time until every node answers it."""
        self.ws.edit(APP, "rev", constants=[Constant.from_text(f"REV:Integer={revision}")])
        started = time.perf_counter()
        self.ws.deploy(APP, "dev")
        returned = time.perf_counter()
        live = max(pool.map(lambda c: self._live_after(c, revision), self.clients))
        self.deploy_seconds.append(returned - started)
        self.after_return.append(live - returned)
        self.after_start.append(live - started)

    def stop(self) -> None:
        for client in getattr(self, "clients", []):
            client.close()
        for process in self.processes:
            process.terminate()
        for process in self.processes:
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _quantiles(values: list[float]) -> str:
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]
    return (
        f"p50 {statistics.median(ordered) * 1000:7.1f}  p90 {p90 * 1000:7.1f}  "
        f"max {ordered[-1] * 1000:7.1f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=2)
    parser.add_argument("--deploys", type=int, default=30)
    parser.add_argument("--stores", default="sqlite,postgresql", help="comma-separated kinds")
    parser.add_argument("--postgres", default=None, help="a PostgreSQL URL (default: start one)")
    options = parser.parse_args()
    kinds = [k.strip() for k in options.stores.split(",") if k.strip()]
    unknown = set(kinds) - {"sqlite", "postgresql"}
    if unknown:
        parser.error(f"unknown store kind(s): {', '.join(sorted(unknown))}")
    root = Path(tempfile.mkdtemp(prefix="notebook-kit-bench-propagation-"))
    clusters: list[Cluster] = []
    with contextlib.ExitStack() as stack:
        stack.callback(shutil.rmtree, root, True)
        if "postgresql" in kinds:
            url = options.postgres or stack.enter_context(throwaway_postgres())
        for kind in kinds:
            store = url if kind == "postgresql" else None
            cluster = Cluster(kind, root / kind, store, options.nodes)
            stack.callback(cluster.stop)
            clusters.append(cluster.start())
        with ThreadPoolExecutor(options.nodes) as pool:
            for revision in range(1, options.deploys + 1):
                for cluster in clusters:  # the store kinds take turns, deploy by deploy
                    cluster.measure(revision, pool)
                    time.sleep(random.uniform(0.05, 0.3))  # land anywhere in a poll period
        print(f"deploy -> live on all of {options.nodes} nodes, {options.deploys} deploys (ms)")
        for cluster in clusters:
            print(f"  {cluster.kind:<10} after deploy returned  {_quantiles(cluster.after_return)}")
            print(f"  {'':<10} after deploy started   {_quantiles(cluster.after_start)}")
            print(f"  {'':<10} the deploy itself      {_quantiles(cluster.deploy_seconds)}")


if __name__ == "__main__":
    main()

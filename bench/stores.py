"""The two stores side by side: SQLite (the workspace file) and PostgreSQL (shared).

Starts a throwaway PostgreSQL server from Debian's packages (as the tests do), then, in
rounds that alternate which store goes first, measures on each store:

- ``deploy``: one deploy of a 4-definition application (validate, snapshot, commit), ms;
- ``poll``: one ``generation()`` read, what every worker does every reload interval, µs;
- ``flush``: appending a batch of 10 request-log entries to a full log (10,000 kept), ms;
- ``live``: deploy -> the new answer served by a running ``notebook-kit serve`` (default
  settings: PostgreSQL is notified, SQLite is polled every 0.25 s), ms, p50 and max.

Prints medians over the rounds. Needs PostgreSQL's binaries (/usr/lib/postgresql/*/bin).

    python bench/stores.py --rounds 5 --deploys 20
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE / "tests"))

from pg import PostgresServer  # noqa: E402  (the tests' throwaway server)

from notebook_kit.runtime.process.handles import ServerProcess  # noqa: E402
from notebook_kit.workspace.workspace import Workspace  # noqa: E402

ROW = (0.0, 0.001, "dev", ("GET", "/dev/app/x"), 200, None, None)


def _timed(call: Callable[[], object], times: int) -> float:
    """Median seconds of ``times`` calls."""
    spent = []
    for _ in range(times):
        started = time.perf_counter()
        call()
        spent.append(time.perf_counter() - started)
    return statistics.median(spent)


def _hello(ws: Workspace, answer: str) -> None:
    ws.edit("hello", "hi", action=f"res.body = {answer!r}")
    ws.deploy("hello", "dev")


def _live_delays(ws: Workspace, url: str, deploys: int) -> list[float]:
    """Seconds from each deploy's return to the first answer with its new body."""
    home = Path(tempfile.mkdtemp()) if url else ws.home  # SQLite: the store is in the home
    node = ServerProcess(home, store=url).start()
    delays = []
    try:
        with httpx.Client(base_url=node.url, timeout=5) as client:
            for n in range(deploys):
                time.sleep(random.uniform(0, 0.3))  # no phase lock with the pollers
                version = f"v{n}-{time.monotonic()}"
                _hello(ws, version)
                started = time.perf_counter()
                while client.get("/dev/hello/hi").text != version:
                    if time.perf_counter() - started > 10:
                        raise RuntimeError(f"deploy {n} not live within 10 s")
                    time.sleep(0.002)
                delays.append(time.perf_counter() - started)
    finally:
        node.stop()
    return delays


def _one_store(url: str, deploys: int) -> dict[str, float]:
    ws = Workspace(Path(tempfile.mkdtemp()), store=url)
    ws.install_sample()
    ws.create("hello", "hi", label="Hi", method="GET", resource="hi", requires_auth=False)
    _hello(ws, "v")
    store = ws.store
    for _ in range(10_000 // 10):
        store.append_requests([ROW] * 10, 10_000)
    delays = _live_delays(ws, url, deploys)
    return {
        "deploy ms": _timed(lambda: ws.deploy("restapi_sample", "dev"), 20) * 1000,
        "poll µs": _timed(store.generation, 200) * 1e6,
        "flush ms": _timed(lambda: store.append_requests([ROW] * 10, 10_000), 50) * 1000,
        "live p50 ms": statistics.median(delays) * 1000,
        "live max ms": max(delays) * 1000,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--deploys", type=int, default=20)
    args = parser.parse_args()
    server = PostgresServer()
    results: dict[str, list[dict[str, float]]] = {"sqlite": [], "postgresql": []}
    try:
        for round_ in range(args.rounds):
            order = ["sqlite", "postgresql"][:: 1 if round_ % 2 == 0 else -1]
            for name in order:
                url = "" if name == "sqlite" else server.create_database()
                results[name].append(_one_store(url, args.deploys))
    finally:
        server.remove()
    columns = list(results["sqlite"][0])
    print(f"{'store':<12}" + "".join(f"{c:>14}" for c in columns))
    for name, rounds in results.items():
        medians = [statistics.median(r[c] for r in rounds) for c in columns]
        print(f"{name:<12}" + "".join(f"{m:>14.2f}" for m in medians))
    print(f"(medians of {args.rounds} rounds; live: {args.deploys} deploys a round)")


if __name__ == "__main__":
    main()

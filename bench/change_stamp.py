"""The studio's poll: ``Workspace.change_stamp()`` against re-reading what the studio shows.

The studio checks the stamp once a second and re-reads only when it moved. This measures
one stamp read and one full re-read (every application's definitions with their states,
the applications, the deployments: what a refresh without a stamp would do each second)
on workspaces of growing size, rounds interleaved, and prints medians and the ratio.

    python bench/change_stamp.py --rounds 50
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from notebook_kit import Workspace


def make_workspace(home: Path, apps: int, per_app: int) -> Workspace:
    ws = Workspace(home)
    for a in range(apps):
        app = f"app{a}"
        for d in range(per_app):
            ws.create(app, f"d{d}", label=f"Definition {d}", method="GET", resource=f"r{d}/{{x}}")
        ws.deploy(app, "dev")
        ws.deploy(app, "dev")  # some history
        ws.deploy(app, "prod")
    return ws


def full_read(ws: Workspace) -> None:
    for app in ws.applications():
        ws.listing(app.id)
    ws.deployments()
    ws.keys()


def timed(call: Callable[[], object]) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=50)
    options = parser.parse_args()
    sizes = [(1, 4), (5, 10), (10, 20)]
    print(f"{'definitions':>11} {'stamp µs':>9} {'full re-read µs':>16} {'ratio':>7}")
    with tempfile.TemporaryDirectory() as scratch:
        for apps, per_app in sizes:
            ws = make_workspace(Path(scratch) / f"w{apps}x{per_app}", apps, per_app)
            stamp: list[float] = []
            full: list[float] = []
            for _ in range(options.rounds):  # interleaved: both see the same noise
                stamp.append(timed(ws.change_stamp))
                full.append(timed(lambda ws=ws: full_read(ws)))
            s, f = statistics.median(stamp) * 1e6, statistics.median(full) * 1e6
            print(f"{apps * per_app:>11} {s:>9.0f} {f:>16.0f} {f / s:>7.1f}")


if __name__ == "__main__":
    main()

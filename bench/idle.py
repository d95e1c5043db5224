"""CPU an idle ``notebook-kit serve`` uses, as a share of one core.

    python bench/idle.py [--seconds 10] [--workers 1,2] [--baseline TREE]

Starts the sample workspace's server (and the ``--baseline`` tree's, side by side), lets
it settle, sends nothing, and reads the CPU time of each server's process tree from /proc
over ``--seconds``. Goal: under 0.1 % of a core.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from run import (
    BenchError,
    Server,
    free_port,
    notebook_kit_command,
    prepare_sample,
    start,
    stop,
    tree_cpu_seconds,
    wait_ready,
)

GOAL = 0.1  # percent of one core


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="idle span measured (10)")
    parser.add_argument("--settle", type=float, default=3.0, help="wait after start, s (3)")
    parser.add_argument("--workers", default="1,2", help="worker counts to try (1,2)")
    parser.add_argument("--baseline", type=Path, metavar="TREE", help="also this checkout")
    args = parser.parse_args(argv)
    args.workers = [int(w) for w in args.workers.split(",")]
    return args


def servers_for(args: argparse.Namespace, workdir: Path, workers: int) -> list[Server]:
    trees = [("ours", None)]
    if args.baseline is not None:
        trees.append(("before", args.baseline.resolve()))
    servers = []
    for name, tree in trees:
        home = workdir / f"{name}-{workers}"
        env = {**os.environ, "NOTEBOOK_KIT_HOME": str(home)}
        if tree is not None:
            env["PYTHONPATH"] = str(tree)
        _, key = prepare_sample(home, env)
        command = [*notebook_kit_command(), "serve", "--host", "127.0.0.1"]
        command += ["--workers", str(workers), "--port"]
        port = free_port()
        servers.append(start(name, [*command, str(port)], port, home, env, key))
    return servers


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    rows = []
    try:
        with tempfile.TemporaryDirectory(prefix="notebook-kit-idle-") as workdir:
            for workers in args.workers:
                servers = servers_for(args, Path(workdir), workers)
                try:
                    for server in servers:
                        wait_ready(server)
                    time.sleep(args.settle)
                    before = {s.name: tree_cpu_seconds(s.process.pid) for s in servers}
                    time.sleep(args.seconds)
                    for server in servers:
                        used = tree_cpu_seconds(server.process.pid) - before[server.name]
                        rows.append((server.name, workers, 100 * used / args.seconds))
                finally:
                    for server in servers:
                        stop(server)
    except BenchError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(f"idle server CPU over {args.seconds:g} s (goal < {GOAL} % of a core)")
    for name, workers, percent in rows:
        verdict = "PASS" if percent < GOAL else "FAIL"
        print(f"  {name:7} {workers} worker(s): {percent:6.3f} % of a core  {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

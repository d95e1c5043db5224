"""A heavy or stuck action beside a light one, as a user hits it: the sample calculator's
latency while two callers loop on a heavy action, and how the server stops meanwhile.

For each worker count and scenario, a fresh ``notebook-kit serve`` (of this checkout,
and of ``--baseline TREE`` too, the two taking turns first): the calculator is called
every ``--interval`` seconds for ``--quiet`` seconds with nothing else running, then for
``--loaded`` seconds while two callers loop on the scenario's action; then the server gets
SIGTERM with the heavy calls still in flight. Printed per scenario and server: the
calculator's p99 quiet, its p50, p99 and max loaded, the calls it got answered, what the
heavy calls answered (status x count, median seconds), and how long SIGTERM took to stop
the server (killed after 10 s).

    python bench/isolation.py
    git worktree add ../before 94b7e3f && python bench/isolation.py --baseline ../before
    python bench/isolation.py --workers 1 --scenarios pandas,regex --json isolation.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import httpx

CALCULATOR = "/dev/restapi_sample/calculator"
CALC = b'{"arg1": 12.5, "arg2": 7.25, "operation": "plus"}'
PANDAS = """\
import numpy as np
import pandas as pd
frame = pd.DataFrame({"k": np.random.randint(0, 1000, 500_000), "v": np.random.rand(500_000)})
for _ in range(4):  # about 0.45 s: a Python function per group, the GIL held throughout
    found = frame.groupby("k")["v"].apply(lambda s: (s - s.mean()).abs().max())
res.body = {"groups": int(found.shape[0])}
"""
# name: (action, timeout in seconds or None for the default), the table's rows
SCENARIOS: dict[str, tuple[str, int | None]] = {
    "pandas": (PANDAS, None),
    "regex": ("import re\nre.match(r'(a+)+$', 'a' * 27 + 'b')\nres.body = 'no'\n", 1),
    "regex40": ("import re\nre.match(r'(a+)+$', 'a' * 40 + 'b')\nres.body = 'no'\n", 1),
    "async_sleep": ("import asyncio, time\nawait asyncio.sleep(0)\ntime.sleep(5)\n", 1),
    "async_spin": ("import asyncio\nawait asyncio.sleep(0)\nwhile True:\n    pass\n", 1),
    "alloc": ("x = b'x' * (2 * 1024 ** 3)\nres.body = 'no'\n", None),
}
# Run in the measured tree's own interpreter path: the workspace as that version lays it out.
SETUP = """\
import json, sys
from notebook_kit import Workspace
ws = Workspace(sys.argv[1])
ws.install_sample()
for name, (action, timeout) in json.loads(sys.argv[2]).items():
    ws.create("heavy", name, label=name, method="GET", resource=name, action=action)
    ws.edit("heavy", name, requires_auth=False, timeout=timeout)
ws.deploy("heavy", "dev")
print(ws.keys()["dev"])
"""
STOP_LIMIT = 10.0


class BenchError(Exception):
    """A problem that stops the benchmark, with a message for the user."""


@dataclass
class Tree:
    name: str
    env: dict[str, str]
    home: Path
    key: str = ""


@dataclass
class Result:
    tree: str
    workers: int
    scenario: str
    quiet_p99_ms: float
    loaded_p50_ms: float
    loaded_p99_ms: float
    loaded_max_ms: float
    answered: int
    sent: int
    heavy: dict[str, int] = field(default_factory=dict)
    heavy_median_s: float | None = None
    stop_s: float | None = None  # None: still running after STOP_LIMIT, then killed


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def prepare(tree: Tree) -> None:
    actions = json.dumps(SCENARIOS)
    done = subprocess.run(
        [sys.executable, "-c", SETUP, str(tree.home), actions],
        env=tree.env,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tree.home.parent,
    )
    if done.returncode != 0:
        raise BenchError(f"{tree.name}: setting up the workspace failed:\n{done.stderr}")
    tree.key = done.stdout.split()[-1]


def start(tree: Tree, workers: int, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    command = [sys.executable, "-m", "notebook_kit", "serve", "--host", "127.0.0.1"]
    with log.open("ab") as out:
        process = subprocess.Popen(
            [*command, "--port", str(port), "--workers", str(workers)],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**tree.env, "NOTEBOOK_KIT_HOME": str(tree.home)},
            cwd=tree.home.parent,
            start_new_session=True,  # its own process group: the stop reaches what is left
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise BenchError(f"{tree.name}: the server exited at start (see {log})")
        with contextlib.suppress(httpx.TransportError):
            httpx.post(url + CALCULATOR, content=CALC, headers={"x-api-key": tree.key})
            return process, url
        time.sleep(0.2)
    kill(process)
    raise BenchError(f"{tree.name}: the server did not answer within 60 s (see {log})")


def kill(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def calculator(url: str, key: str, seconds: float, interval: float) -> tuple[list[float], int]:
    """Latencies of the calls answered 200, and how many were sent (a call unanswered
    within 10 s counts as sent, not answered)."""
    found: list[float] = []
    sent = 0
    with httpx.Client(base_url=url, timeout=10) as client:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            sent += 1
            began = time.perf_counter()
            with contextlib.suppress(httpx.TransportError):
                answer = client.post(CALCULATOR, content=CALC, headers={"x-api-key": key})
                if answer.status_code == 200:
                    found.append(time.perf_counter() - began)
            time.sleep(interval)
    return found, sent


def measure(tree: Tree, workers: int, scenario: str, args: argparse.Namespace) -> Result:
    process, url = start(tree, workers, args.workdir / f"{tree.name}-{workers}.log")
    outcomes: list[tuple[str, float]] = []
    stop = threading.Event()

    def hammer() -> None:  # one of the two callers looping on the heavy action
        with httpx.Client(timeout=15) as client:
            while not stop.is_set():
                began = time.monotonic()
                try:
                    status = str(client.get(f"{url}/dev/heavy/{scenario}").status_code)
                except httpx.TransportError as error:
                    status = type(error).__name__
                outcomes.append((status, time.monotonic() - began))

    callers = [threading.Thread(target=hammer, daemon=True) for _ in range(2)]
    try:
        calculator(url, tree.key, 1.0, args.interval)  # warm: connections, proven fast
        quiet, _ = calculator(url, tree.key, args.quiet, args.interval)
        for caller in callers:
            caller.start()
        time.sleep(0.5)  # the heavy calls are in
        loaded, sent = calculator(url, tree.key, args.loaded, args.interval)
        heavy = list(outcomes)  # what ended while the calculator was measured
        began = time.monotonic()
        process.send_signal(signal.SIGTERM)  # with the heavy calls in flight
        try:
            process.wait(timeout=STOP_LIMIT)
            stopped: float | None = time.monotonic() - began
        except subprocess.TimeoutExpired:
            stopped = None
    finally:
        stop.set()
        kill(process)
    for caller in callers:
        caller.join(timeout=20)
    answered = len(loaded)
    loaded = loaded or [float("nan")]  # nothing answered: no latency to show
    return Result(
        tree=tree.name,
        workers=workers,
        scenario=scenario,
        quiet_p99_ms=1000 * p99(quiet),
        loaded_p50_ms=1000 * statistics.median(loaded),
        loaded_p99_ms=1000 * p99(loaded),
        loaded_max_ms=1000 * max(loaded),
        answered=answered,
        sent=sent,
        heavy=dict(Counter(status for status, _ in heavy)),
        heavy_median_s=statistics.median(t for _, t in heavy) if heavy else None,
        stop_s=stopped,
    )


def row(result: Result) -> str:
    heavy = " ".join(f"{status}x{count}" for status, count in sorted(result.heavy.items()))
    median = "-" if result.heavy_median_s is None else f"{result.heavy_median_s:.1f}"
    stop = f">{STOP_LIMIT:g} killed" if result.stop_s is None else f"{result.stop_s:.1f}"
    within = result.loaded_p99_ms - result.quiet_p99_ms <= 50 and result.answered == result.sent
    return (
        f"| {result.workers} | {result.scenario} | {result.tree} | {result.quiet_p99_ms:.1f} "
        f"| {result.loaded_p50_ms:.1f} | {result.loaded_p99_ms:.1f} | {result.loaded_max_ms:.1f} "
        f"| {result.answered}/{result.sent} | {'yes' if within else 'no'} "
        f"| {heavy or '-'} | {median} | {stop} |"
    )


HEADER = (
    "| workers | heavy action | server | quiet p99 ms | loaded p50 ms | loaded p99 ms "
    "| loaded max ms | answered | p99 within 50 ms | heavy calls | heavy median s | stop s |\n"
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", default="1,2", help="comma-separated worker counts")
    parser.add_argument("--scenarios", default=",".join(SCENARIOS), help="comma-separated")
    parser.add_argument("--quiet", type=float, default=5.0, help="seconds, nothing heavy")
    parser.add_argument("--loaded", type=float, default=6.0, help="seconds under the load")
    parser.add_argument("--interval", type=float, default=0.05, help="between calculator calls")
    parser.add_argument("--baseline", type=Path, help="also measure this checkout as before")
    parser.add_argument("--json", type=Path, help="also write every result here")
    args = parser.parse_args(argv)
    args.workers = [int(count) for count in args.workers.split(",")]
    args.scenarios = args.scenarios.split(",")
    unknown = set(args.scenarios) - set(SCENARIOS)
    if unknown:
        parser.error(f"unknown scenarios: {', '.join(sorted(unknown))}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="nk-isolation-") as workdir:
        args.workdir = Path(workdir)
        env = {k: v for k, v in os.environ.items() if not k.startswith("NOTEBOOK_KIT_")}
        trees = [Tree("now", dict(env), args.workdir / "now" / "home")]
        if args.baseline is not None:
            path = os.pathsep.join(
                [str(args.baseline.resolve()), *filter(None, [env.get("PYTHONPATH")])]
            )
            before = {**env, "PYTHONPATH": path}
            trees.insert(0, Tree("before", before, args.workdir / "before" / "home"))
        results: list[Result] = []
        try:
            for tree in trees:
                tree.home.parent.mkdir(parents=True)
                prepare(tree)
            print(HEADER, flush=True)
            turn = 0
            for workers in args.workers:
                for scenario in args.scenarios:
                    turn += 1
                    order = trees if turn % 2 else trees[::-1]  # who goes first alternates
                    for tree in order:
                        result = measure(tree, workers, scenario, args)
                        results.append(result)
                        print(row(result), flush=True)
        except BenchError as error:
            print(f"isolation: {error}", file=sys.stderr)
            return 2
        if args.json:
            args.json.write_text(json.dumps([vars(result) for result in results], indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

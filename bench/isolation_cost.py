"""What running an action outside the server process would cost, per call.

docs/trust-model.md describes an isolated mode (actions in worker processes under
another OS user, reaching the built-ins over a narrow channel). This measures the hop
it adds, on a small action (read two numbers from the request, set a JSON body):

* ``inline``: the action called in the server's process (what the runtime does now);
* ``worker``: the request sent to a long-lived worker process over a pipe, run there,
  the response sent back (pickled both ways): the isolated mode's per-call cost;
* ``fork``: a fresh forked process per call (nothing kept between calls);
* ``spawn``: a fresh interpreter per call (``python -c``), the naive "a subprocess per
  call".

    python bench/isolation_cost.py --calls 2000 --fresh 30
"""

from __future__ import annotations

import argparse
import os
import pickle
import statistics
import struct
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

ACTION = """\
def action(req, res):
    body = req["body"]
    res["statusCode"] = 200
    res["body"] = {"sum": body["arg1"] + body["arg2"], "id": req["pathParameters"]["id"]}
"""
REQUEST = {
    "httpMethod": "POST",
    "path": "/dev/app/calc/E003",
    "pathParameters": {"id": "E003"},
    "queryStringParameters": {},
    "headers": {"content-type": "application/json", "x-api-key": "k" * 40},
    "body": {"arg1": 12.5, "arg2": 7.25, "operation": "plus"},
}


def compiled() -> Callable[[dict[str, Any], dict[str, Any]], None]:
    namespace: dict[str, Any] = {}
    exec(ACTION, namespace)
    return namespace["action"]  # type: ignore[no-any-return]


def inline(action: Callable[..., None]) -> float:
    started = time.perf_counter()
    res: dict[str, Any] = {}
    action(dict(REQUEST), res)
    return time.perf_counter() - started


def _send(fd: int, value: object) -> None:
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    os.write(fd, struct.pack("!I", len(data)) + data)


def _receive(fd: int) -> Any:
    size = struct.unpack("!I", os.read(fd, 4))[0]
    data = b""
    while len(data) < size:
        data += os.read(fd, size - len(data))
    return pickle.loads(data)


def start_worker(action: Callable[..., None]) -> tuple[int, int, int]:
    """A forked worker that runs the action for each request it reads."""
    to_worker, from_parent = os.pipe()
    from_worker, to_parent = os.pipe()
    pid = os.fork()
    if pid == 0:
        while True:
            req = _receive(to_worker)
            if req is None:
                os._exit(0)
            res: dict[str, Any] = {}
            action(req, res)
            _send(to_parent, res)
    return pid, from_parent, from_worker


def worker_call(pipes: tuple[int, int, int]) -> float:
    _, out, back = pipes
    started = time.perf_counter()
    _send(out, REQUEST)
    _receive(back)
    return time.perf_counter() - started


def fork_call(action: Callable[..., None]) -> float:
    started = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        action(dict(REQUEST), {})
        os._exit(0)
    os.waitpid(pid, 0)
    return time.perf_counter() - started


def spawn_call() -> float:
    code = ACTION + f"\nres = {{}}\naction({REQUEST!r}, res)\nprint(res)"
    started = time.perf_counter()
    subprocess.run([sys.executable, "-S", "-c", code], check=True, capture_output=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000, help="inline and worker calls")
    parser.add_argument("--fresh", type=int, default=30, help="fork and spawn calls")
    args = parser.parse_args()
    action = compiled()
    pipes = start_worker(action)
    figures = {
        "inline": [inline(action) for _ in range(args.calls)],
        "worker": [worker_call(pipes) for _ in range(args.calls)],
        "fork": [fork_call(action) for _ in range(args.fresh)],
        "spawn": [spawn_call() for _ in range(args.fresh)],
    }
    _send(pipes[1], None)
    os.waitpid(pipes[0], 0)
    base = statistics.median(figures["inline"])
    for name, times in figures.items():
        median = statistics.median(times)
        print(f"{name:>7}: median {median * 1e6:10.1f} µs per call  ({median / base:8.0f}x inline)")


if __name__ == "__main__":
    main()

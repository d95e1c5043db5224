"""Deploys and reloads at scale: this tree against a baseline checkout, side by side.

For each size (10, 1,000 and 10,000 deployed definitions by default) and each tree, in
its own interpreter (``PYTHONPATH``), rounds interleaved:

* **deploy CPU**: process CPU seconds of ``Workspace.deploy`` redeploying the big
  application with one definition changed (validation, compile, the write);
* **deploy -> live**: from ``deploy()`` returning to the first answer of the changed
  definition from a running ``notebook-kit serve`` (polled every 2 ms);
* **worst stall**: the slowest answer of an unchanged one-definition API, polled
  back-to-back on one keep-alive connection (by a process of its own) during the
  redeploys and the half second after each;
* **bytes / redeploy**: how much the deployment history grows per redeploy with one
  change (deployment rows plus, where they exist, new definition versions).

Then, once per tree, the request log's **flush cost** with a full log (10,000 entries, one
entry a flush: a server at 10 req/s). Medians over all rounds and redeploys.

    git worktree add ../before-issue-10 7b72d40
    python bench/scale.py --baseline ../before-issue-10
    python bench/scale.py --baseline ../before-issue-10 --sizes 10 1000 --rounds 1
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent

PROBE = r"""
import http.client, json, shutil, sqlite3, subprocess, sys, tempfile, time
from pathlib import Path
from notebook_kit.domain.models import Definition
from notebook_kit.runtime.process.handles import ServerProcess
from notebook_kit.workspace.workspace import Workspace

size, redeploys = int(sys.argv[1]), int(sys.argv[2])
home = Path(tempfile.mkdtemp(prefix="nk-scale-"))
ws = Workspace(home)
stamp = "2026-01-01T00:00:00Z"

def definition(app, n, marker=0):
    return Definition.from_dict({
        "app": app, "id": f"d{n}", "label": f"d{n}", "method": "GET",
        "resource": f"g{n // 100}/r{n}", "content_type": "application/json",
        "requires_auth": False, "action": f"res.body = {{'n': {n}, 'm': {marker}}}",
        "functions": "", "constants": [], "created_at": stamp, "updated_at": stamp,
    })

ws.create_application("big")
ws.create_application("small")
with ws.store.transaction():
    for n in range(size):
        ws.store.insert_definition(definition("big", n))
    ws.store.insert_definition(definition("small", 0))
ws.deploy("big", "dev")
ws.deploy("small", "dev")

def history_bytes():
    conn = sqlite3.connect(ws.store.path)
    total = conn.execute("SELECT COALESCE(SUM(LENGTH(snapshot)), 0) FROM deployments").fetchone()[0]
    columns = [r[1] for r in conn.execute("PRAGMA table_info(deployments)")]
    if "versions" in columns:
        sql = "SELECT COALESCE(SUM(LENGTH(versions)), 0) FROM deployments"
        total += conn.execute(sql).fetchone()[0]
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "definition_versions" in tables:
        total += conn.execute(
            "SELECT COALESCE(SUM(LENGTH(body) + LENGTH(hash)), 0) FROM definition_versions"
        ).fetchone()[0]
    conn.close()
    return total

def get(conn, path):
    conn.request("GET", path)
    response = conn.getresponse()
    return response.status, response.read()

server = ServerProcess(home).start(timeout=300)
# The client polling the unchanged API is a process of its own: this one's pauses (it
# deploys) must not count as the server's.
poller = subprocess.Popen(
    [sys.executable, "-c", POLLER, str(server.port)],
    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
)

def polling(on):
    poller.stdin.write("on\n" if on else "off\n")
    poller.stdin.flush()

result = {"deploy_cpu": [], "live": [], "bytes": []}
probe = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
try:
    for round in range(1, redeploys + 1):
        n = (round * 7919) % size
        with ws.store.transaction():
            ws.store.replace_definition(f"d{n}", definition("big", n, round))
        before = history_bytes()
        polling(True)
        cpu = time.process_time()
        ws.deploy("big", "dev")
        result["deploy_cpu"].append(time.process_time() - cpu)
        deployed = time.perf_counter()
        path = f"/dev/big/g{n // 100}/r{n}"
        while True:
            status, body = get(probe, path)
            if status == 200 and json.loads(body)["m"] == round:
                break
            if time.perf_counter() - deployed > 60:
                raise SystemExit("not live within 60 s")
            time.sleep(0.002)
        result["live"].append(time.perf_counter() - deployed)
        time.sleep(0.5)  # the other workers' reloads, and the stall window after
        polling(False)
        result["bytes"].append(history_bytes() - before)
finally:
    worst, _ = poller.communicate("quit\n", timeout=60)
    server.stop()
    shutil.rmtree(home, ignore_errors=True)
result["stall"] = [float(worst)]
print(json.dumps(result))
"""

POLLER = r"""
import http.client, sys, threading, time
conn = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=30)
state = {"on": False, "quit": False, "worst": 0.0}

def commands():
    for line in sys.stdin:
        state["on"] = line.strip() == "on"
        if line.strip() == "quit":
            break
    state["quit"] = True

threading.Thread(target=commands, daemon=True).start()
while not state["quit"]:
    on, started = state["on"], time.perf_counter()
    conn.request("GET", "/dev/small/g0/r0")
    conn.getresponse().read()
    if on and state["on"]:
        state["worst"] = max(state["worst"], time.perf_counter() - started)
    time.sleep(0.001)
print(state["worst"])
"""

FLUSH_PROBE = r"""
import statistics, sys, tempfile, time
from pathlib import Path
from notebook_kit.store import Store
row = (0.0, 0.001, "dev", ("GET", "/dev/app/x"), 200, None, None)
with tempfile.TemporaryDirectory() as home:
    store = Store(Path(home) / "s.sqlite3")
    for _ in range(10_000):
        store.append_requests([row], 10_000)
    blocks = []
    for _ in range(5):  # the median block: one busy moment of the machine counts once
        started = time.perf_counter()
        for _ in range(100):
            store.append_requests([row], 10_000)
        blocks.append((time.perf_counter() - started) / 100 * 1000)
    store.close()
print(statistics.median(blocks))
"""


def run(tree: Path, code: str, *args: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run(
        [sys.executable, "-c", code, *args],
        env=env,
        cwd="/",
        check=True,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    return out.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, required=True)
    parser.add_argument("--candidate", type=Path, default=HERE)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 1000, 10_000])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--redeploys", type=int, default=3)
    options = parser.parse_args()
    trees = {"baseline": options.baseline.resolve(), "candidate": options.candidate.resolve()}
    found: dict[tuple[int, str], dict[str, list[float]]] = {}
    for _ in range(options.rounds):
        for size in options.sizes:
            for name, tree in trees.items():
                probe = PROBE.replace("POLLER,", repr(POLLER) + ",")
                figures = json.loads(run(tree, probe, str(size), str(options.redeploys)))
                into = found.setdefault((size, name), {})
                for key, values in figures.items():
                    into.setdefault(key, []).extend(values)
    flush: dict[str, list[float]] = {name: [] for name in trees}
    for _ in range(options.rounds):
        for name, tree in trees.items():
            flush[name].append(float(run(tree, FLUSH_PROBE)))

    def med(size: int, name: str, key: str) -> float:
        return statistics.median(found[size, name][key])

    print(f"medians over {options.rounds} round(s) x {options.redeploys} redeploys")
    print(
        f"{'definitions':>11} {'tree':>9} {'deploy CPU':>11} {'deploy->live':>13} "
        f"{'worst stall':>12} {'bytes/redeploy':>15}"
    )
    for size in options.sizes:
        for name in trees:
            print(
                f"{size:>11,} {name:>9} {med(size, name, 'deploy_cpu'):>9.3f} s "
                f"{med(size, name, 'live'):>11.3f} s {max(found[size, name]['stall']):>10.3f} s "
                f"{med(size, name, 'bytes'):>15,.0f}"
            )
    print("request-log append with a full log (10,000 entries, 1 entry a flush):")
    base, cand = (statistics.median(flush[n]) for n in trees)
    print(f"  baseline {base:.3f} ms   candidate {cand:.3f} ms")


if __name__ == "__main__":
    main()

"""Load benchmark: notebook_kit's Sanic runtime against a bare Sanic app.

    python bench/run.py [--rounds 5] [--duration 5] [--connections 32] [--workers 1]
                        [--threads 1] [--endpoints calculator,employee,list,validated]
                        [--baseline TREE] [--json FILE] [--self-test]
                        [--caller stage|consumer|limited]

See bench/README.md for what is measured and how to read the table.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import re
import shutil
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import httpx

BENCH_DIR = Path(__file__).resolve().parent
CALCULATOR = "/dev/restapi_sample/calculator"
EMPLOYEE = "/dev/restapi_sample/employee/"
CALCULATOR_BODY = '{"arg1": 12.5, "arg2": 7.25, "operation": "plus"}'
LIST = "/dev/bench/employees"  # a definition the benchmark adds: 20 rows as a JSON list
# A definition the benchmark adds with a contract (a query parameter and a JSON body
# declared, both checked before the action runs); bare_app.py checks the same by schema.
ITEMS = "/dev/bench/items?page=2"
ITEM_BODY = '{"name": "pen", "qty": 3, "tags": ["office", "blue"]}'
ENDPOINTS = {
    "calculator": ("POST", CALCULATOR, CALCULATOR_BODY),
    "employee": ("GET", EMPLOYEE + "E003", None),
    "list": ("GET", LIST, None),
    "validated": ("POST", ITEMS, ITEM_BODY),
}
SERVERS = ("ours", "bare")
CPU_TARGET = 1.10  # ours / bare, at most
THROUGHPUT_TARGET = 0.90  # ours / bare, at least
LIST_ROWS = 20
# The list endpoint's action, as an analyst would write it; bare_app.py does the same.
LIST_ACTION = """\
res.headers["Access-Control-Allow-Origin"] = "*"
res.body = db.query("SELECT id, name, age FROM staff ORDER BY id LIMIT 20")
"""
ITEMS_ACTION = """\
import json
item = json.loads(req.body)
page = int(req.queryStringParameters["page"])
res.statusCode = 201
res.body = {"name": item["name"], "qty": item["qty"], "page": page}
"""
ITEMS_CONTRACT = {
    "parameters": [
        {"name": "page", "in": "query", "required": True,
         "schema": {"type": "integer", "minimum": 1, "maximum": 1000}},
    ],
    "body": {
        "schema": {
            "type": "object",
            "required": ["name", "qty"],
            "additionalProperties": False,
            "properties": {
                "name": {"type": "string", "minLength": 1},
                "qty": {"type": "integer", "minimum": 1},
                "tags": {"type": "array", "items": {"type": "string"}},
            },
        }
    },
}  # fmt: skip
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
SAMPLE_EMPLOYEES = [
    ("E001", "Alice", 34),
    ("E002", "Bob", 45),
    ("E003", "Carol", 29),
    ("E004", "Dave", 52),
    ("E005", "Eve", 38),
]


class BenchError(Exception):
    """A problem that stops the benchmark, with a message for the user."""


@dataclass
class Server:
    name: str
    process: subprocess.Popen[bytes]
    port: int
    log: Path
    key: str = ""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@dataclass
class Sample:
    """One wrk round against one server and endpoint."""

    requests: int
    rps: float
    p50_ms: float
    p99_ms: float
    cpu_us_per_request: float
    errors: int


# --- server process tree CPU ------------------------------------------------------------


def read_stat(pid: int) -> tuple[int, int] | None:
    """(parent pid, CPU ticks) of a process from /proc/<pid>/stat, None if it is gone.

    The ticks are utime + stime, plus cutime + cstime so that a descendant which
    exited and was reaped during a round still counts (through its parent).
    """
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()  # fields from the 3rd (state) on
    ppid = int(fields[1])
    utime, stime, cutime, cstime = (int(value) for value in fields[11:15])
    return ppid, utime + stime + cutime + cstime


def tree_cpu_seconds(root: int) -> float:
    """CPU time used so far by a process and all its descendants."""
    stats = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (stat := read_stat(int(entry))) is not None:
            stats[int(entry)] = stat
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in stats.items():
        children.setdefault(ppid, []).append(pid)
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        if pid in stats:
            total += stats[pid][1]
            todo.extend(children.get(pid, []))
    return total / CLOCK_TICKS


# --- wrk ----------------------------------------------------------------------------------


def lua_string(value: str) -> str:
    return json.dumps(value)  # a JSON string of ASCII text is a valid Lua string literal


def write_wrk_script(path: Path, method: str, body: str | None, key: str) -> None:
    lines = [f"wrk.method = {lua_string(method)}", f'wrk.headers["x-api-key"] = {lua_string(key)}']
    if body is not None:
        lines.append(f"wrk.body = {lua_string(body)}")
        lines.append('wrk.headers["Content-Type"] = "application/json"')
    path.write_text("\n".join(lines) + "\n")


UNITS_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60000.0, "h": 3600000.0}


def parse_duration_ms(value: str) -> float:
    match = re.fullmatch(r"([\d.]+)(us|ms|s|m|h)", value)
    if match is None:
        raise BenchError(f"cannot read wrk latency {value!r}")
    return float(match[1]) * UNITS_MS[match[2]]


def parse_wrk(output: str) -> dict[str, Any]:
    """Requests, req/s, p50, p99 and error count from `wrk --latency` output."""

    def find(pattern: str) -> re.Match[str]:
        match = re.search(pattern, output, re.MULTILINE)
        if match is None:
            raise BenchError(f"unexpected wrk output (no match for {pattern!r}):\n{output}")
        return match

    socket_errors = re.search(r"^\s*Socket errors:(.*)$", output, re.MULTILINE)
    errors = sum(int(n) for n in re.findall(r"\d+", socket_errors[1])) if socket_errors else 0
    non_2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    return {
        "requests": int(find(r"^\s*(\d+) requests in")[1]),
        "rps": float(find(r"^Requests/sec:\s*([\d.]+)")[1]),
        "p50_ms": parse_duration_ms(find(r"^\s*50%\s+(\S+)")[1]),
        "p99_ms": parse_duration_ms(find(r"^\s*99%\s+(\S+)")[1]),
        "errors": errors + (int(non_2xx[1]) if non_2xx else 0),
    }


def run_wrk(url: str, script: Path, args: argparse.Namespace, duration: float) -> str:
    command = [
        "wrk",
        "--latency",
        f"--threads={args.threads}",
        f"--connections={args.connections}",
        f"--duration={duration:g}s",
        "--timeout=10s",
        f"--script={script}",
        url,
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=duration + 60)
    if done.returncode != 0:
        raise BenchError(f"wrk failed ({done.returncode}):\n{done.stdout}{done.stderr}")
    return done.stdout


def measure(server: Server, endpoint: str, script: Path, args: argparse.Namespace) -> Sample:
    path = ENDPOINTS[endpoint][1]
    before = tree_cpu_seconds(server.process.pid)
    output = run_wrk(server.url + path, script, args, args.duration)
    cpu = tree_cpu_seconds(server.process.pid) - before
    figures = parse_wrk(output)
    if figures["requests"] == 0:
        raise BenchError(f"{server.name} served no {endpoint} request:\n{output}")
    return Sample(cpu_us_per_request=cpu / figures["requests"] * 1e6, **figures)


# --- servers ------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start(
    name: str, command: list[str], port: int, workdir: Path, env: dict[str, str], key: str
) -> Server:
    log = workdir / f"{name}.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=workdir,
            start_new_session=True,  # own process group, so stop() can reach every worker
        )
    return Server(name, process, port, log, key)


def log_tail(server: Server, lines: int = 30) -> str:
    text = server.log.read_text(errors="replace").splitlines()
    return "\n".join(text[-lines:])


def wait_ready(server: Server, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    url = server.url + EMPLOYEE + "E001"
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise BenchError(
                f"{server.name} server exited with {server.process.returncode}:\n"
                + log_tail(server)
            )
        with contextlib.suppress(httpx.TransportError):
            httpx.get(url, headers={"x-api-key": server.key}, timeout=2.0)
            return
        time.sleep(0.2)
    raise BenchError(
        f"{server.name} server did not answer within {timeout:g} s:\n" + log_tail(server)
    )


def stop(server: Server) -> None:
    if server.process.poll() is None:
        server.process.send_signal(signal.SIGINT)
        with contextlib.suppress(subprocess.TimeoutExpired):
            server.process.wait(timeout=15)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(server.process.pid, signal.SIGKILL)  # leftovers of this server's group only
    server.process.wait()


def check_same_answers(servers: list[Server], validated: bool = True) -> None:
    """Abort unless every server answers the check requests identically (the validated
    endpoint's only when it is measured)."""
    checks = [
        ("POST", CALCULATOR, CALCULATOR_BODY, 200),
        ("POST", CALCULATOR, '{"arg1": 1, "arg2": 2, "operation": "times"}', 400),
        ("GET", EMPLOYEE + "E003", None, 200),
        ("GET", EMPLOYEE + "E999", None, 404),
        ("GET", EMPLOYEE + "E003", None, 403),  # sent with a wrong key
        ("GET", LIST, None, 200),
    ]
    if validated:
        checks.append(("POST", ITEMS, ITEM_BODY, 201))
    for method, path, body, status in checks:
        answers = []
        for server in servers:
            key = server.key if status != 403 else server.key + "x"
            sent = {"x-api-key": key, "Content-Type": "application/json"}
            response = httpx.request(
                method, server.url + path, content=body, headers=sent, timeout=10.0
            )
            answers.append(
                (response.status_code, response.headers.get("content-type"), response.content)
            )
        described = "\n".join(f"  {s.name}: {a!r}" for s, a in zip(servers, answers, strict=True))
        if any(answer != answers[0] for answer in answers):
            raise BenchError(f"servers answer {method} {path} differently:\n{described}")
        if answers[0][0] != status:
            raise BenchError(
                f"{method} {path} gave status {answers[0][0]}, not {status}:\n{described}"
            )


# --- workspace ----------------------------------------------------------------------------


def run_cli(env: dict[str, str], *arguments: str) -> str:
    """Run ``notebook-kit ARGUMENTS`` (the tree ``env``'s PYTHONPATH names, if any)."""
    command = [*notebook_kit_command(), *arguments]
    done = subprocess.run(
        command, env=env, capture_output=True, text=True, timeout=300, cwd=env["NOTEBOOK_KIT_HOME"]
    )
    if done.returncode != 0:
        raise BenchError(
            f"`notebook-kit {' '.join(arguments)}` failed:\n{done.stdout}{done.stderr}"
        )
    return done.stdout


def notebook_kit_command() -> list[str]:
    """``python -m notebook_kit``: this interpreter, honouring PYTHONPATH (so a checkout
    other than the installed one can be measured: ``PYTHONPATH=/path/to/tree``, or
    ``--baseline``). The commands run in the temporary home, outside any source tree."""
    if importlib.util.find_spec("notebook_kit") is None:
        raise BenchError("notebook_kit is not importable: pip install -e . (or set PYTHONPATH)")
    return [sys.executable, "-m", "notebook_kit"]


def prepare_sample(home: Path, env: dict[str, str], validated: bool = True) -> tuple[Path, str]:
    """Install the sample application and the list endpoint (a ``staff`` table of
    ``LIST_ROWS`` rows, ``GET bench/employees``) with notebook-kit; return the environment
    database and the dev key."""
    home.mkdir(parents=True, exist_ok=True)
    run_cli(env, "sample")
    # <home>/environment/ since actions are sandboxed; <home>/ in a baseline tree before
    layouts = [home / "environment" / "environment.sqlite3", home / "environment.sqlite3"]
    database = next((path for path in layouts if path.exists()), None)
    if database is None:
        raise BenchError(f"`notebook-kit sample` did not create {layouts[0]}")
    add_staff_table(database)
    action = home / "list_action.py"
    action.write_text(LIST_ACTION)
    run_cli(
        env,
        *("create", "bench", "employees", "--label", "Staff list", "--method", "get"),
        *("--resource", "employees", "--action-file", str(action)),
    )
    if validated:  # a tree from before contracts has no --contract-file
        items = home / "items_action.py"
        items.write_text(ITEMS_ACTION)
        contract = home / "items_contract.json"
        contract.write_text(json.dumps(ITEMS_CONTRACT))
        run_cli(
            env,
            *("create", "bench", "items", "--label", "Add an item", "--method", "post"),
            *("--resource", "items", "--action-file", str(items)),
            *("--contract-file", str(contract)),
        )
    run_cli(env, "deploy", "bench", "--stage", "dev")
    keys = run_cli(env, "keys")
    match = re.search(r"^dev\s+(\S+)\s*$", keys, re.MULTILINE)
    if match is None:
        raise BenchError(f"no `dev <key>` line in `notebook-kit keys` output:\n{keys}")
    return database, match[1]


def prepare_self_test(home: Path) -> tuple[Path, str]:
    """An employee table of our own, for running the bare app against itself."""
    database = home / "employees.sqlite3"
    with contextlib.closing(sqlite3.connect(database)) as db, db:
        db.execute("CREATE TABLE employee (id TEXT PRIMARY KEY, name TEXT, age INTEGER)")
        db.executemany("INSERT INTO employee VALUES (?, ?, ?)", SAMPLE_EMPLOYEES)
    add_staff_table(database)
    return database, os.urandom(16).hex()


def add_staff_table(database: Path) -> None:
    """The list endpoint's table: ``LIST_ROWS`` rows."""
    with contextlib.closing(sqlite3.connect(database)) as db, db:
        db.execute("CREATE TABLE staff (id TEXT PRIMARY KEY, name TEXT, age INTEGER)")
        rows = [(f"S{i:03}", f"Staff member {i}", 20 + i) for i in range(1, LIST_ROWS + 1)]
        db.executemany("INSERT INTO staff VALUES (?, ?, ?)", rows)


def consumer_key(env: dict[str, str], limited: bool) -> str:
    """A consumer's key for ours (the bare app is given the same key): without limits, or
    with a rate and a quota far above what the run sends (every call spends a unit)."""
    command = ["consumer", "create", "bench", "--json"]
    if limited:
        command += ["--rate", "1000000/s", "--quota", "1000000000000/day"]
    return str(json.loads(run_cli(env, *command))["key"])


@contextlib.contextmanager
def running_servers(args: argparse.Namespace, workdir: Path) -> Iterator[list[Server]]:
    """ours, bare (and before, the ``--baseline`` tree, with a home it made itself: an
    older tree may refuse a store a newer one has migrated)."""
    home = workdir / "ours"
    env = {**os.environ, "NOTEBOOK_KIT_HOME": str(home)}
    home.mkdir()
    validated = "validated" in args.endpoints
    database, key = (
        prepare_self_test(home) if args.self_test else prepare_sample(home, env, validated)
    )
    if args.caller != "stage" and not args.self_test:
        key = consumer_key(env, limited=args.caller == "limited")
    bare = [sys.executable, str(BENCH_DIR / "bare_app.py"), "--db", str(database)]
    bare += ["--key", key, "--workers", str(args.workers), "--port"]
    serve = [*notebook_kit_command(), "serve", "--host", "127.0.0.1", "--workers"]
    serve += [str(args.workers), "--port"]
    plan = [("ours", bare if args.self_test else serve, env, key), ("bare", bare, env, key)]
    if args.baseline is not None:
        old_home = workdir / "before"
        old_env = {**env, "NOTEBOOK_KIT_HOME": str(old_home)}
        old_env["PYTHONPATH"] = os.pathsep.join(
            [str(args.baseline.resolve()), *filter(None, [os.environ.get("PYTHONPATH")])]
        )
        _, old_key = prepare_sample(old_home, old_env, validated)
        plan.append(("before", serve, old_env, old_key))
    servers: list[Server] = []
    try:
        for name, command, server_env, server_key in plan:
            port = free_port()
            cwd = Path(server_env["NOTEBOOK_KIT_HOME"])
            servers.append(start(name, [*command, str(port)], port, cwd, server_env, server_key))
        for server in servers:
            wait_ready(server)
        yield servers
    finally:
        for server in servers:
            stop(server)


# --- the benchmark ------------------------------------------------------------------------


def benchmark(args: argparse.Namespace, servers: list[Server], workdir: Path) -> dict:
    scripts: dict[tuple[str, str], Path] = {}
    for endpoint in args.endpoints:
        method, _, body = ENDPOINTS[endpoint]
        for server in servers:
            scripts[endpoint, server.name] = workdir / f"{endpoint}-{server.name}.lua"
            write_wrk_script(scripts[endpoint, server.name], method, body, server.key)
    samples: dict[str, dict[str, list[Sample]]] = {
        endpoint: {server.name: [] for server in servers} for endpoint in args.endpoints
    }
    for endpoint in args.endpoints:  # warm-up, not measured
        for server in servers:
            script = scripts[endpoint, server.name]
            run_wrk(server.url + ENDPOINTS[endpoint][1], script, args, args.warmup)
    for round_number in range(args.rounds):
        # Alternate who goes first, so a drift in machine load favours no server.
        order = servers if round_number % 2 == 0 else servers[::-1]
        for endpoint in args.endpoints:
            for server in order:
                sample = measure(server, endpoint, scripts[endpoint, server.name], args)
                if sample.errors:
                    raise BenchError(f"{server.name} {endpoint}: {sample.errors} failed requests")
                samples[endpoint][server.name].append(sample)
                print(
                    f"round {round_number + 1}/{args.rounds} {endpoint:10} {server.name:6} "
                    f"{sample.rps:9.0f} req/s  {sample.cpu_us_per_request:7.0f} µs CPU/req",
                    file=sys.stderr,
                    flush=True,
                )
    return summarise(samples)


def summarise(samples: dict[str, dict[str, list[Sample]]]) -> dict:
    results: dict[str, Any] = {}
    for endpoint, by_server in samples.items():
        medians = {
            name: {
                field: statistics.median(getattr(s, field) for s in runs)
                for field in ("rps", "p50_ms", "p99_ms", "cpu_us_per_request")
            }
            for name, runs in by_server.items()
        }
        ratios = {
            field: medians["ours"][field] / medians["bare"][field] for field in medians["ours"]
        }
        before = {
            field: medians["before"][field] / medians["bare"][field]
            for field in medians.get("before", {})
        }
        results[endpoint] = {
            "median": medians,
            "ratio": ratios,
            "before_ratio": before,
            "meets_target": {
                "cpu": ratios["cpu_us_per_request"] <= CPU_TARGET,
                "throughput": ratios["rps"] >= THROUGHPUT_TARGET,
            },
            "rounds": {name: [asdict(s) for s in runs] for name, runs in by_server.items()},
        }
    return results


def table(results: dict) -> str:
    header = (
        f"{'endpoint':11} {'server':12} {'req/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'CPU µs/req':>11}"
    )
    lines = [header, "-" * len(header)]
    for endpoint, result in results.items():
        for name, m in result["median"].items():
            lines.append(
                f"{endpoint:11} {name:12} {m['rps']:9.0f} {m['p50_ms']:8.2f} "
                f"{m['p99_ms']:8.2f} {m['cpu_us_per_request']:11.1f}"
            )
        r, ok = result["ratio"], result["meets_target"]
        for name, ratio in (("ours / bare", r), ("before / bare", result["before_ratio"])):
            if ratio:
                lines.append(
                    f"{endpoint:11} {name:12} {ratio['rps']:9.3f} {ratio['p50_ms']:8.3f} "
                    f"{ratio['p99_ms']:8.3f} {ratio['cpu_us_per_request']:11.3f}"
                )
        lines.append(
            f"{'':11} target: CPU/req <= {CPU_TARGET}x {'PASS' if ok['cpu'] else 'FAIL'}, "
            f"req/s >= {THROUGHPUT_TARGET}x {'PASS' if ok['throughput'] else 'FAIL'}"
        )
        lines.append("")
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="measured rounds (default 5)")
    parser.add_argument("--duration", type=float, default=5.0, help="seconds per wrk run (5)")
    parser.add_argument("--warmup", type=float, default=1.0, help="unmeasured first run, s (1)")
    parser.add_argument("--connections", type=int, default=32, help="wrk connections (32)")
    parser.add_argument("--threads", type=int, default=1, help="wrk threads (1)")
    parser.add_argument("--workers", type=int, default=1, help="server workers, both (1)")
    parser.add_argument(
        "--endpoints",
        default=",".join(ENDPOINTS),
        help=f"comma-separated, of {', '.join(ENDPOINTS)} (default: all)",
    )
    parser.add_argument(
        "--baseline",
        type=Path,
        metavar="TREE",
        help="also measure this checkout (e.g. a git worktree of an older commit) as 'before'",
    )
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write results as JSON")
    parser.add_argument(
        "--caller",
        choices=("stage", "consumer", "limited"),
        default="stage",
        help="ours is called with the dev stage key (default), a consumer's key, or the key "
        "of a consumer with a rate and a quota (limits on, never reached)",
    )
    parser.add_argument(
        "--self-test",
        action="store_true",
        help="run the bare app as both servers: checks the harness, shows the noise (ratio ~1)",
    )
    args = parser.parse_args(argv)
    args.endpoints = [e.strip() for e in args.endpoints.split(",") if e.strip()]
    if not args.endpoints or set(args.endpoints) - set(ENDPOINTS):
        parser.error(f"--endpoints takes a comma-separated list of {', '.join(ENDPOINTS)}")
    if args.baseline is not None and not (args.baseline / "notebook_kit").is_dir():
        parser.error(f"--baseline {args.baseline}: no notebook_kit package there")
    if args.self_test and args.baseline is not None:
        parser.error("--self-test and --baseline do not go together")
    if args.rounds < 1 or args.duration <= 0 or args.warmup <= 0 or args.workers < 1:
        parser.error("--rounds and --workers must be >= 1, --duration and --warmup > 0")
    if args.threads < 1 or args.connections < args.threads:
        parser.error("need --threads >= 1 and --connections >= --threads")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if shutil.which("wrk") is None:
        print("error: this benchmark needs wrk (Debian: apt-get install wrk)", file=sys.stderr)
        return 2
    try:
        with (
            tempfile.TemporaryDirectory(prefix="notebook-kit-bench-") as workdir,
            running_servers(args, Path(workdir)) as servers,
        ):
            check_same_answers(servers, "validated" in args.endpoints)
            results = benchmark(args, servers, Path(workdir))
    except BenchError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    mode = "self-test: bare app against itself" if args.self_test else "notebook_kit vs bare Sanic"
    print(
        f"\n{mode}; medians of {args.rounds} rounds x {args.duration:g} s, "
        f"{args.connections} connections, {args.threads} wrk thread(s), "
        f"{args.workers} server worker(s), {os.cpu_count()} CPUs\n"
    )
    print(table(results))
    if args.json:
        config = {k: v for k, v in vars(args).items() if k != "json"}
        config["baseline"] = str(args.baseline) if args.baseline else None
        document = {"config": config, "results": results}
        args.json.write_text(json.dumps(document, indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Request-log flush cost with a full log: this tree against a baseline checkout.

Fills a fresh store's log to ``request_log_size`` (10,000) with batches of ``--batch``
entries (a server at 10 req/s flushes about one entry per 0.1 s batch), then times further
appends, each trimming the log back to 10,000. Each tree runs in its own interpreter
(``PYTHONPATH``), rounds interleaved; prints the median milliseconds per append.

    git worktree add ../nk-baseline 38ceab9
    python bench/request_log.py --baseline ../nk-baseline
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
KEEP = 10_000

PROBE = """
import sys, tempfile, time
from pathlib import Path
from notebook_kit.store import Store  # notebook_kit.store before and after the layout
batch, appends = int(sys.argv[1]), int(sys.argv[2])
store = Store(Path(tempfile.mkdtemp()) / "s.sqlite3")
row = (0.0, 0.001, "dev", ("GET", "/dev/app/x"), 200, None, None)
for _ in range({keep} // batch):
    store.append_requests([row] * batch, {keep})
started = time.perf_counter()
for _ in range(appends):
    store.append_requests([row] * batch, {keep})
print((time.perf_counter() - started) / appends * 1000)
""".replace("{keep}", str(KEEP))


def measure(tree: Path, batch: int, appends: int) -> float:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(batch), str(appends)],
        env=env,
        cwd="/",
        check=True,
        capture_output=True,
        text=True,
    )
    return float(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, required=True)
    parser.add_argument("--candidate", type=Path, default=HERE)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--appends", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    times: dict[str, list[float]] = {"baseline": [], "candidate": []}
    for _ in range(options.rounds):
        for name in times:
            tree = getattr(options, name).resolve()
            times[name].append(measure(tree, options.batch, options.appends))
    base, cand = (statistics.median(times[n]) for n in ("baseline", "candidate"))
    print(f"append with a full log ({KEEP} entries, batches of {options.batch}):")
    print(f"  baseline {base:.3f} ms   candidate {cand:.3f} ms   ratio {base / cand:.1f}x")


if __name__ == "__main__":
    main()

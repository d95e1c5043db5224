"""CLI start-up: ``notebook-kit --help`` and ``notebook-kit keys``, this tree against a baseline.

Both trees run in the same loop, rounds interleaved (baseline, candidate, baseline, ...),
each command a fresh interpreter (``python -m notebook_kit``) with ``PYTHONPATH`` set to
the tree, so the figures share the machine's noise. Prints the median wall time per
command and tree, and the ratio baseline / candidate (above 1: the candidate is faster).

    git worktree add ../nk-baseline 38ceab9     # the flat package, before the layout
    python bench/cli_startup.py --baseline ../nk-baseline --rounds 15
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
COMMANDS = {"--help": ["--help"], "keys": ["keys"]}


def run_once(tree: Path, home: Path, args: list[str]) -> float:
    env = {**os.environ, "PYTHONPATH": str(tree), "NOTEBOOK_KIT_HOME": str(home)}
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "notebook_kit", *args],
        env=env,
        cwd=home.parent,  # not a tree: ``-m`` puts the working directory first on sys.path
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, required=True, help="a checkout to compare with")
    parser.add_argument("--candidate", type=Path, default=HERE, help="default: this tree")
    parser.add_argument("--rounds", type=int, default=15)
    options = parser.parse_args()
    trees = {"baseline": options.baseline.resolve(), "candidate": options.candidate.resolve()}
    with tempfile.TemporaryDirectory() as scratch:
        homes = {name: Path(scratch) / name for name in trees}
        for home in homes.values():
            home.mkdir()
        for name, tree in trees.items():  # create each workspace once, outside the timing
            run_once(tree, homes[name], ["keys"])
        times: dict[tuple[str, str], list[float]] = {}
        for _ in range(options.rounds):
            for command, args in COMMANDS.items():
                for name, tree in trees.items():
                    times.setdefault((command, name), []).append(run_once(tree, homes[name], args))
    print(f"{'command':<8} {'baseline ms':>12} {'candidate ms':>13} {'speed-up':>9}")
    for command in COMMANDS:
        base = statistics.median(times[command, "baseline"]) * 1000
        cand = statistics.median(times[command, "candidate"]) * 1000
        print(f"{command:<8} {base:>12.0f} {cand:>13.0f} {base / cand:>8.2f}x")


if __name__ == "__main__":
    main()

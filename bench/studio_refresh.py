"""What one studio refresh costs, against re-reading every application.

The studio polls ``Workspace.change_stamp()`` and, when it moved, calls ``refresh()``: the
application bar, the list of the application shown, the open definition and the open tab.
This measures, on 10 applications of 20 definitions (200 in all, each deployed), one
stamp read, one ``Studio.refresh()`` with the Edit tab open and with the Resources tab
open, and the full re-read a studio showing everything would do (every application's
listing, the deployments, the keys). Rounds interleaved; medians.

    python bench/studio_refresh.py --rounds 20
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from change_stamp import full_read, make_workspace

from notebook_kit.notebook.ui import Studio
from notebook_kit.notebook.ui.studio import TAB_TITLES


def timed(call: Callable[[], object]) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        ws = make_workspace(Path(scratch) / "w", apps=10, per_app=20)
        studio = Studio(ws, poll_interval=None)
        studio.select("app0", "d0")
        other = Studio(ws, poll_interval=None)
        other.select("app0", "d0")
        other.tabs.selected_index = TAB_TITLES.index("Resources")
        samples: dict[str, list[float]] = {"stamp": [], "edit": [], "resources": [], "full": []}
        for _ in range(options.rounds):  # interleaved: all see the same noise
            samples["stamp"].append(timed(ws.change_stamp))
            samples["edit"].append(timed(studio.refresh))
            samples["resources"].append(timed(other.refresh))
            samples["full"].append(timed(lambda: full_read(ws)))
        studio.close()
        other.close()
    medians = {name: statistics.median(values) * 1000 for name, values in samples.items()}
    print("200 definitions in 10 applications, medians in ms")
    print(f"  change stamp                     {medians['stamp']:8.2f}")
    print(f"  studio refresh, Edit tab open    {medians['edit']:8.2f}")
    print(f"  studio refresh, Resources open   {medians['resources']:8.2f}")
    print(f"  full re-read of every app        {medians['full']:8.2f}")
    print(f"  full / Edit-tab refresh          {medians['full'] / medians['edit']:8.1f}x")


if __name__ == "__main__":
    main()

"""What the Logs tab costs with a full request log (10,000 entries, the default size).

Fills a fresh store's log with 10,000 requests over the last hour (mixed stages,
applications and status classes), then times, rounds interleaved, the median of:

- ``redraw``: ``LogsPanel.refresh()`` when the log changed (read, filter, aggregate, draw);
- ``unchanged``: ``LogsPanel.refresh()`` when nothing changed (what most ticks cost);
- ``charts``: ``request_charts(ws.request_log_frame())`` from a notebook.

The panel refreshes every 3 s while its tab is open: the figures say how much of that a
refresh takes.

    python bench/logs_refresh.py --rounds 7
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from collections.abc import Callable

KEEP = 10_000


def fill(ws: object) -> None:
    store = ws.store  # type: ignore[attr-defined]
    now = time.time()
    rng = random.Random(7)
    rows = []
    for n in range(KEEP):
        stage = rng.choice(("dev", "prod"))
        app = rng.choice(("shop", "billing", "restapi_sample"))
        status = rng.choices((200, 302, 404, 500), (85, 3, 9, 3))[0]
        at = now - 3600 + n * 3600 / KEEP
        rows.append(
            (at, stage, "GET", f"/{stage}/{app}/items/{n % 50}", status, rng.expovariate(0.1))
        )
    for start in range(0, KEEP, 100):
        store.append_requests(rows[start : start + 100], KEEP)


def timed(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    options = parser.parse_args()

    from notebook_kit import Workspace, request_charts
    from notebook_kit.notebook.ui.logs import LogsPanel

    ws = Workspace(tempfile.mkdtemp())
    fill(ws)
    assert len(ws.request_log()) == KEEP
    panel = LogsPanel(ws)

    def redraw() -> None:
        panel._shown = None  # as after a new request
        panel.refresh()

    figures: dict[str, list[float]] = {"redraw": [], "unchanged": [], "charts": []}
    for _ in range(options.rounds):
        figures["redraw"].append(timed(redraw))
        figures["unchanged"].append(timed(panel.refresh))
        figures["charts"].append(
            timed(lambda: request_charts(ws.request_log_frame())._repr_html_())
        )
    panel.close()
    for name, values in figures.items():
        print(f"{name:10} median {statistics.median(values):7.1f} ms  (rounds: {len(values)})")


if __name__ == "__main__":
    main()

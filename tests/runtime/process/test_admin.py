"""The admin listener (``runtime/process/admin.py``, ``node.py``): /live, /ready and
/metrics on a port of their own, in the supervisor; the metrics counted from the log's
own batches, so their totals equal the request log's after real traffic over 2 workers."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from support.polling import wait_until
from support.serving import free_port

from notebook_kit import Workspace
from notebook_kit.errors import ServerError
from notebook_kit.runtime.process.handles import BackgroundServer
from notebook_kit.runtime.process.metrics import BUCKETS

EMPLOYEE = "/dev/restapi_sample/employee/E001"


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[BackgroundServer, Workspace]]:
    workspace = Workspace(tmp_path_factory.mktemp("admin") / "home")
    workspace.install_sample()
    with BackgroundServer(workspace, workers=2, admin_port=0) as server:
        assert isinstance(server, BackgroundServer)
        yield server, workspace


def _families(text: str) -> dict[str, list[tuple[str, dict[str, str], float]]]:
    return {
        family.name: [(s.name, s.labels, s.value) for s in family.samples]
        for family in text_string_to_metric_families(text)
    }


def test_live_and_ready_answer_on_the_admin_port_not_the_apis(
    served: tuple[BackgroundServer, Workspace],
) -> None:
    server, _ = served
    admin = server.admin_url
    assert admin is not None and server.admin_port != server.port
    live = httpx.get(f"{admin}/live")
    assert (live.status_code, live.text) == (200, "live\n")
    ready = httpx.get(f"{admin}/ready")
    assert (ready.status_code, ready.text.splitlines()[0]) == (200, "ready")
    assert ready.headers["content-type"].startswith("text/plain")
    assert httpx.get(f"{server.url}/live").status_code == 404  # the API's port: not these
    assert httpx.get(f"{server.url}/ready").status_code == 404


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [("GET", "/", 404), ("GET", "/dev/restapi_sample/employee/E001", 404),
     ("POST", "/ready", 405), ("DELETE", "/metrics", 405), ("HEAD", "/live", 200)],
)  # fmt: skip
def test_anything_else_is_refused(
    served: tuple[BackgroundServer, Workspace], method: str, path: str, status: int
) -> None:
    server, _ = served
    answer = httpx.request(method, f"{server.admin_url}{path}")
    assert answer.status_code == status
    if status == 405:
        assert answer.headers["allow"] == "GET, HEAD"
    if method == "HEAD":
        assert answer.content == b""


def test_metrics_totals_equal_the_request_log_over_two_workers(
    served: tuple[BackgroundServer, Workspace],
) -> None:
    server, workspace = served
    key = {"x-api-key": workspace.keys()["dev"]}
    server.sync()  # the calls of the tests before this one are counted and logged
    before = _request_counts(httpx.get(f"{server.admin_url}/metrics").text)
    logged_before = len(workspace.request_log())
    sent: Counter[tuple[str, str, str]] = Counter()
    with httpx.Client(base_url=server.url, timeout=10) as client:
        for _ in range(30):
            assert client.get(EMPLOYEE, headers=key).status_code == 200
            sent["GET", "2xx", "restapi_sample"] += 1
        for n in range(7):
            assert client.get(f"/dev/no_such_app/{n}").status_code == 404
            sent["GET", "4xx", ""] += 1
        for _ in range(5):
            assert client.delete(EMPLOYEE, headers=key).status_code == 405
            sent["DELETE", "4xx", "restapi_sample"] += 1
    server.sync()
    families = _families(httpx.get(f"{server.admin_url}/metrics").text)
    after = _request_counts_of(families)
    counted = after - before
    log = workspace.request_log()[logged_before:]
    assert len(log) == sum(sent.values()) == sum(counted.values())
    by_log = Counter((row["method"], f"{row['status'] // 100}xx") for row in log)
    assert counted == by_log
    employee = [
        value
        for name, labels, value in families["notebook_kit_request_duration_seconds"]
        if name.endswith("_count") and labels["definition"] == "employee"
    ]
    assert sum(employee) >= 30
    buckets = [
        labels["le"]
        for name, labels, _ in families["notebook_kit_request_duration_seconds"]
        if name.endswith("_bucket") and labels["definition"] == "employee"
    ]
    assert buckets == [*(str(float(b)) for b in BUCKETS), "+Inf"]
    samples = [sample for family in families.values() for sample in family]
    gauges = {name: value for name, labels, value in samples if not labels}
    assert gauges["notebook_kit_ready"] == 1
    assert gauges["notebook_kit_workers"] == 2
    assert gauges["notebook_kit_request_log_backlog_entries"] == 0
    assert gauges["notebook_kit_request_log_dropped_total"] == 0
    generation = workspace.store.generation()
    assert gauges["notebook_kit_reload_generation"] == generation
    assert 0 <= gauges["notebook_kit_reload_age_seconds"] < 600


def _request_counts(text: str) -> Counter[tuple[str, str]]:
    return _request_counts_of(_families(text))


def _request_counts_of(
    families: dict[str, list[tuple[str, dict[str, str], float]]],
) -> Counter[tuple[str, str]]:
    counts: Counter[tuple[str, str]] = Counter()
    for _, labels, value in families.get("notebook_kit_requests", []):
        counts[labels["method"], labels["status"]] += int(value)
    return counts


def test_series_past_the_setting_are_counted_as_other(tmp_path: Path) -> None:
    workspace = Workspace(tmp_path / "home")
    workspace.install_sample()
    workspace.set_setting("metrics_max_series", "2")
    with BackgroundServer(workspace, admin_port=0) as server:
        assert isinstance(server, BackgroundServer)
        with httpx.Client(base_url=server.url, timeout=10) as client:
            for n in range(6):
                client.request(f"M{n}", f"/dev/restapi_sample/x{n}")
        server.sync()
        families = _families(httpx.get(f"{server.admin_url}/metrics").text)
    series = [labels for _, labels, _ in families["notebook_kit_requests"]]
    assert len(series) == 3  # two label sets, then one "other" with the status class kept
    other = [labels for labels in series if labels["method"] == "other"]
    assert other == [
        {"stage": "other", "application": "other", "definition": "other",
         "method": "other", "status": "4xx"}
    ]  # fmt: skip
    total = sum(v for _, _, v in families["notebook_kit_requests"])
    assert total == 6


def test_the_admin_port_cannot_be_the_apis(tmp_path: Path) -> None:
    workspace = Workspace(tmp_path / "home")
    port = free_port()
    with pytest.raises(ServerError, match="is the API's port"):
        BackgroundServer(workspace, port=port, admin_port=port).start()


def test_serve_opens_the_admin_listener_from_the_command_line(tmp_path: Path) -> None:
    home = tmp_path / "home"
    Workspace(home).install_sample()
    port, admin = free_port(), free_port()
    command = [sys.executable, "-m", "notebook_kit", "--home", str(home), "serve"]
    command += ["--port", str(port), "--admin-port", str(admin)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        assert process.stdout is not None
        banner = process.stdout.readline().decode()
        assert f"admin at http://127.0.0.1:{admin}" in banner
        ready = httpx.get(f"http://127.0.0.1:{admin}/ready", timeout=5)
        assert (ready.status_code, ready.text) == (200, "ready\n")
        process.terminate()
        # while the calls in flight drain, the node says it is stopping, then it is gone
        wait_until(lambda: _stopping_or_gone(admin), within=10)
    finally:
        process.kill()
        process.wait()
        if process.stdout is not None:
            process.stdout.close()


def _stopping_or_gone(port: int) -> bool:
    try:
        answer = httpx.get(f"http://127.0.0.1:{port}/ready", timeout=1)
    except httpx.TransportError:
        return True
    return answer.status_code == 503 and answer.text == "stopping\n"


def test_a_notebooks_serve_opens_the_admin_listener_too(tmp_path: Path) -> None:
    workspace = Workspace(tmp_path / "home")
    server = workspace.serve(admin_port=0)
    try:
        assert server.admin_url is not None
        assert httpx.get(f"{server.admin_url}/ready", timeout=5).text == "ready\n"
    finally:
        server.stop()

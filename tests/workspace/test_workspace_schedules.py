"""Schedules in the workspace: saved, deployed with the snapshot (rollback restores them,
undeploy stops them), paused per stage, run by hand in a real sandboxed action process
(told its last success), the overlap rule, export and import."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from notebook_kit.errors import ConflictError, FormatError, NotFoundError, ValidationError
from notebook_kit.workspace.workspace import Workspace

TOLD = (
    "res.body = {'told': json.loads(req.body)['schedule'], 'tick': req.headers['X-Schedule-Tick']}"
)


@pytest.fixture(params=["sqlite", "postgres"])
def ws(request: pytest.FixtureRequest, tmp_path: Path) -> Workspace:
    url = "" if request.param == "sqlite" else str(request.getfixturevalue("fresh_database"))
    workspace = Workspace(tmp_path / "home", store=url)
    workspace.create("reports", "refresh", label="R", method="POST", resource="refresh",
                     action="import json\n" + TOLD)  # fmt: skip
    workspace.create("reports", "one", label="O", method="GET", resource="one/{id}", action="pass")
    return workspace


def _deployed(ws: Workspace) -> list[tuple[str, str, str]]:
    return [(r["stage"], r["name"], r["cron"]) for r in ws.schedules("reports") if r["stage"]]


def test_a_schedule_runs_once_deployed_and_follows_the_snapshot(ws: Workspace) -> None:
    ws.add_schedule("reports", "nightly", "refresh", "0 2 * * *", "Europe/Paris")
    (saved,) = ws.schedules("reports")
    assert saved["stage"] is None and saved["next_run"] is None  # saved, not deployed
    ws.deploy("reports", "prod")
    assert _deployed(ws) == [("prod", "nightly", "0 2 * * *")]
    (row,) = ws.schedules("reports")
    assert row["next_run"].endswith(":00:00.000Z") and row["paused"] is False
    ws.add_schedule("reports", "nightly", "refresh", "0 3 * * *", replace=True)
    assert _deployed(ws) == [("prod", "nightly", "0 2 * * *")]  # until the next deploy
    ws.deploy("reports", "prod")
    assert _deployed(ws) == [("prod", "nightly", "0 3 * * *")]
    ws.rollback("reports", "prod")
    assert _deployed(ws) == [("prod", "nightly", "0 2 * * *")]  # rollback restores them
    ws.undeploy("reports", "prod")
    assert _deployed(ws) == []  # undeploy stops them


def test_bad_schedules_are_refused_with_a_reason(ws: Workspace) -> None:
    with pytest.raises(ValidationError, match="does not have"):
        ws.add_schedule("reports", "s", "missing", "* * * * *")
    with pytest.raises(ValidationError, match="path parameters"):
        ws.add_schedule("reports", "s", "one", "* * * * *")
    with pytest.raises(NotFoundError, match="application 'nope' does not exist"):
        ws.add_schedule("nope", "s", "refresh", "* * * * *")
    ws.add_schedule("reports", "s", "refresh", "* * * * *")
    with pytest.raises(ConflictError, match="already has a schedule 's'"):
        ws.add_schedule("reports", "s", "refresh", "*/2 * * * *")
    with pytest.raises(NotFoundError, match="no schedule 's' of reports is deployed to dev"):
        ws.run_schedule_now("reports", "s", "dev")
    ws.delete("reports", "refresh")
    with pytest.raises(ValidationError, match="does not have"):
        ws.deploy("reports", "dev")  # its definition is gone: the deploy says so
    with pytest.raises(NotFoundError):
        ws.delete_schedule("reports", "other")


def test_run_now_runs_the_action_and_tells_it_its_last_success(ws: Workspace) -> None:
    ws.add_schedule("reports", "hourly", "refresh", "@hourly")
    ws.deploy("reports", "dev")
    first = ws.run_schedule_now("reports", "hourly", "dev")
    assert first["status"] == "succeeded" and first["manual"] is True
    assert first["duration_ms"] > 0 and first["error"] is None
    second = ws.run_schedule_now("reports", "hourly", "dev")
    runs = ws.schedule_runs("reports", "hourly")
    assert [r["id"] for r in runs] == [second["id"], first["id"]]
    ws.edit("reports", "refresh", action="raise ValueError('no table')")
    ws.deploy("reports", "dev")
    failed = ws.run_schedule_now("reports", "hourly", "dev")
    assert failed["status"] == "failed" and failed["error"] == "ValueError: no table"
    assert ws.schedules("reports")[0]["last_status"] == "failed"


def test_the_action_is_told_its_tick_and_last_success(ws: Workspace) -> None:
    ws.add_schedule("reports", "hourly", "refresh", "@hourly")
    ws.deploy("reports", "dev")
    ws.run_schedule_now("reports", "hourly", "dev")
    last = ws.schedule_runs("reports")[0]["tick"]
    ws.edit("reports", "refresh", action="import json\nraise ValueError(req.body)")
    ws.deploy("reports", "dev")
    (item,) = ws.schedule_keeper.deployed()
    row = ws.schedule_keeper.run_tick(item, "2030-01-01T00:00:00.000Z", "test:1")
    assert row is not None and row["status"] == "failed"
    told = json.loads(row["error"].removeprefix("ValueError: "))["schedule"]
    assert told == {"name": "hourly", "tick": "2030-01-01T00:00:00.000Z", "lastSuccess": last}
    # the same tick again: claimed already, it does not run twice
    assert ws.schedule_keeper.run_tick(item, "2030-01-01T00:00:00.000Z", "test:2") is None


@pytest.mark.parametrize("overlap", ["skip", "queue"])
def test_an_overlapping_tick_is_skipped_or_queued(ws: Workspace, overlap: str) -> None:
    ws.edit("reports", "refresh", action="import time\ntime.sleep(1.5)")
    ws.add_schedule("reports", "slow", "refresh", "* * * * * *", overlap=overlap)
    ws.deploy("reports", "dev")
    (item,) = ws.schedule_keeper.deployed()
    keeper = ws.schedule_keeper
    first = threading.Thread(target=keeper.run_tick, args=(item, "2030-01-01T00:00:01.000Z", "a"))
    first.start()
    time.sleep(0.5)  # the first tick's run has started
    second = keeper.run_tick(item, "2030-01-01T00:00:02.000Z", "b")
    first.join()
    assert second is not None
    runs = {r["tick"][17:19]: r for r in ws.schedule_runs("reports", "slow")}
    assert runs["01"]["status"] == "succeeded"
    if overlap == "skip":
        assert second["status"] == "skipped" and "still running" in second["error"]
    else:
        assert second["status"] == "succeeded"
        assert second["started_at"] >= runs["01"]["finished_at"]  # one at a time


def test_pause_and_resume_per_stage(ws: Workspace) -> None:
    ws.add_schedule("reports", "s", "refresh", "* * * * * *")
    ws.deploy("reports", "dev")
    ws.deploy("reports", "prod")
    ws.pause_schedule("reports", "s", "prod")
    rows = {r["stage"]: r for r in ws.schedules("reports")}
    assert rows["prod"]["paused"] is True and rows["prod"]["next_run"] is None
    assert rows["dev"]["paused"] is False and rows["dev"]["next_run"] is not None
    ws.resume_schedule("reports", "s", "prod")
    assert all(not r["paused"] for r in ws.schedules("reports"))


def test_export_and_import_carry_schedules(ws: Workspace, tmp_path: Path) -> None:
    ws.add_schedule("reports", "nightly", "refresh", "0 2 * * *", "Europe/Paris", "queue")
    document = ws.export("reports")
    assert document["schedules"] == [
        {"name": "nightly", "definition": "refresh", "cron": "0 2 * * *",
         "timezone": "Europe/Paris", "overlap": "queue"}
    ]  # fmt: skip
    other = Workspace(tmp_path / "other")
    other.import_application(document)
    assert [s.to_dict() for s in other.schedule_keeper.saved()] == [
        s.to_dict() for s in ws.schedule_keeper.saved()
    ]
    broken = {**document, "schedules": [{**document["schedules"][0], "definition": "gone"}]}
    with pytest.raises(FormatError, match="invalid schedule: schedule 'nightly' runs"):
        other.import_application(broken, replace=True)
    assert [s.name for s in other.schedule_keeper.saved()] == ["nightly"]


def test_a_commit_carries_the_schedules(ws: Workspace, tmp_path: Path) -> None:
    ws.add_schedule("reports", "nightly", "refresh", "0 2 * * *", "Europe/Paris")
    ws.commit("reports", tmp_path / "repo", "with a schedule")
    written = json.loads((tmp_path / "repo" / "reports" / "schedules.json").read_text())
    assert written == [
        {"name": "nightly", "definition": "refresh", "cron": "0 2 * * *",
         "timezone": "Europe/Paris", "overlap": "skip"}
    ]  # fmt: skip
    ws.delete_schedule("reports", "nightly")
    ws.commit("reports", tmp_path / "repo", "without")
    assert not (tmp_path / "repo" / "reports" / "schedules.json").exists()


def test_a_run_is_held_to_the_definitions_time_limit(ws: Workspace) -> None:
    ws.edit("reports", "refresh", action="import time\ntime.sleep(10)", timeout=1)
    ws.add_schedule("reports", "slow", "refresh", "@hourly")
    ws.deploy("reports", "dev")
    started = time.monotonic()
    run = ws.run_schedule_now("reports", "slow", "dev")
    assert time.monotonic() - started < 5
    assert run["status"] == "failed" and run["error"] == "timed out after 1 s"
    assert 900 < run["duration_ms"] < 5000

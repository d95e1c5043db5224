"""``notebook-kit schedule ...`` through the real command: add, list with next and last
runs, pause and resume, run now, the run log, delete; refusals in one line."""

from __future__ import annotations

import json
from pathlib import Path

from support.processes import run_cli

from notebook_kit.workspace.workspace import Workspace


def _home(tmp_path: Path) -> Path:
    home = tmp_path / "h"
    ws = Workspace(home)
    ws.create("jobs", "refresh", label="Refresh", method="POST", resource="refresh",
              action="import json\nres.body = json.loads(req.body)")  # fmt: skip
    ws.create("jobs", "broken", label="Broken", method="POST", resource="broken",
              action="raise RuntimeError('table missing')")  # fmt: skip
    return home


def test_schedule_commands_end_to_end(tmp_path: Path) -> None:
    home = _home(tmp_path)

    def cli(*args: str) -> str:
        return run_cli("schedule", *args, home=home, check=True).stdout

    out = cli("add", "jobs", "nightly", "--definition", "refresh", "--cron", "0 2 * * *",
              "--tz", "Europe/Paris", "--overlap", "queue")  # fmt: skip
    assert "schedule nightly of jobs saved: refresh at '0 2 * * *' (Europe/Paris" in out
    cli("add", "jobs", "oops", "--definition", "broken", "--cron", "*/5 * * * * *")
    (saved, _) = json.loads(cli("list", "jobs", "--json"))
    assert saved["stage"] is None and saved["next_run"] is None
    run_cli("deploy", "jobs", "--stage", "dev", home=home, check=True)
    rows = {r["name"]: r for r in json.loads(cli("list", "--json"))}
    assert rows["nightly"]["stage"] == "dev" and rows["nightly"]["next_run"].endswith("Z")
    table = cli("list", "jobs")
    assert table.splitlines()[0].split()[:3] == ["APP", "NAME", "STAGE"]
    assert "Europe/Paris" in table

    done = json.loads(cli("run", "jobs", "nightly", "--json"))
    assert done["status"] == "succeeded" and done["manual"] is True
    failed = run_cli("schedule", "run", "jobs", "oops", home=home)
    assert failed.returncode == 1
    assert failed.stdout.startswith("run ") and "failed in" in failed.stdout
    assert "RuntimeError: table missing" in failed.stdout

    runs = json.loads(cli("runs", "jobs", "--json"))
    assert [r["schedule"] for r in runs] == ["oops", "nightly"]
    assert [r["status"] for r in runs] == ["failed", "succeeded"]
    assert "succeeded" in cli("runs", "jobs", "nightly")
    assert json.loads(cli("list", "jobs", "--json"))[0]["last_status"] == "succeeded"

    assert cli("pause", "jobs", "nightly").strip() == "schedule nightly of jobs paused on dev"
    rows = {r["name"]: r for r in json.loads(cli("list", "jobs", "--json"))}
    assert rows["nightly"]["paused"] is True and rows["nightly"]["next_run"] is None
    cli("resume", "jobs", "nightly")
    assert json.loads(cli("list", "jobs", "--json"))[0]["paused"] is False
    cli("delete", "jobs", "oops")
    assert [r["name"] for r in json.loads(cli("list", "jobs", "--json"))] == ["nightly", "oops"]
    run_cli("deploy", "jobs", "--stage", "dev", home=home, check=True)
    assert [r["name"] for r in json.loads(cli("list", "jobs", "--json"))] == ["nightly"]


def test_refusals_are_one_line(tmp_path: Path) -> None:
    home = _home(tmp_path)
    cases = [
        (["add", "jobs", "s", "--definition", "refresh", "--cron", "61 * * * *"],
         "notebook-kit: cron expression '61 * * * *': minute 61 is out of range 0-59\n"),
        (["add", "jobs", "s", "--definition", "refresh", "--cron", "* * * * *", "--tz", "Nowhere"],
         "notebook-kit: time zone 'Nowhere' is not an IANA time zone (such as 'UTC' or "
         "'Europe/Paris')\n"),
        (["add", "jobs", "s", "--definition", "nope", "--cron", "* * * * *"],
         "notebook-kit: schedule 's' runs definition 'nope', which application 'jobs' does "
         "not have\n"),
        (["pause", "jobs", "s"], "notebook-kit: no schedule 's' of jobs is deployed to dev\n"),
        (["run", "jobs", "s", "--stage", "prod"],
         "notebook-kit: no schedule 's' of jobs is deployed to prod\n"),
        (["delete", "jobs", "s"], "notebook-kit: jobs has no schedule 's'\n"),
    ]  # fmt: skip
    for args, message in cases:
        result = run_cli("schedule", *args, home=home)
        assert (result.returncode, result.stderr, result.stdout) == (1, message, ""), args
    bare = run_cli("schedule", home=home)
    assert bare.returncode == 2 and bare.stderr == ""
    assert bare.stdout.startswith("Usage: notebook-kit schedule [OPTIONS] COMMAND [ARGS]...\n")

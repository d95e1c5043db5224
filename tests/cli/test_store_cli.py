"""Choosing the store from the command line (``--store``, ``NOTEBOOK_KIT_STORE``), its
refusals, and ``notebook-kit store copy --to URL``."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import httpx
import psycopg
import pytest
from support.pg import PostgresServer
from support.processes import free_port, run_cli

from notebook_kit.errors import StoreError, ValidationError
from notebook_kit.runtime.process.handles import ServerProcess
from notebook_kit.workspace.workspace import Workspace

CALC = b'{"arg1": 1, "arg2": 2, "operation": "plus"}'


def _one_line_failure(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 1, result
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    return result.stderr


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("mysql://ann:s3cret-pw@db.example/shop", "unsupported store URL"),
        ("postgresql://ann:s3cret-pw@/shop", "needs a host and a database"),
        ("postgresql://ann:s3cret-pw@127.0.0.1:notaport/shop", "bad store URL"),
        ("postgresql://ann:s3cret-pw@127.0.0.1:{port}/shop", "cannot reach the store"),
    ],
)
def test_a_bad_or_unreachable_store_is_one_line_without_the_password(
    tmp_path: Path, url: str, says: str
) -> None:
    url = url.format(port=free_port())
    (tmp_path / "h").mkdir()
    commands: list[tuple[list[str], dict[str, str] | None]] = [
        (["--store", url, "keys"], None),
        (["keys"], {"NOTEBOOK_KIT_STORE": url}),
    ]
    if says != "cannot reach the store":  # serve waits for a store that is down (below)
        commands.append((["--store", url, "serve", "--port", str(free_port())], None))
    for args, env in commands:
        stderr = _one_line_failure(run_cli(*args, home=tmp_path / "h", env=env))
        assert says in stderr and "s3cret-pw" not in stderr
        assert "ann:***@" in stderr
    with pytest.raises((ValidationError, StoreError)) as caught:
        Workspace(tmp_path / "h", store=url)
    assert "s3cret-pw" not in str(caught.value)


def test_serve_waits_for_a_store_that_is_down_saying_so_once_without_the_password(
    tmp_path: Path,
) -> None:
    """A node may start before its PostgreSQL (a reboot, say): it waits, says why in one
    line (no password), and SIGTERM still stops it at once."""
    url = f"postgresql://ann:s3cret-pw@127.0.0.1:{free_port()}/shop"
    (tmp_path / "h").mkdir()
    command = [sys.executable, "-m", "notebook_kit", "--home", str(tmp_path / "h")]
    command += ["--store", url, "serve", "--port", str(free_port())]
    node = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    try:
        assert node.stderr is not None
        line = node.stderr.readline()
        assert "cannot reach the store" in line and "waiting for it" in line
        assert "ann:***@" in line and "s3cret-pw" not in line
        time.sleep(1)
        assert node.poll() is None  # still waiting, not exited nor restarting
    finally:
        node.terminate()
        status = node.wait(10)
        node.stderr.close()  # type: ignore[union-attr]
    assert status == 0


def test_an_unsupported_url_names_the_accepted_forms(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match=r"postgresql://user:password@host:port/database"):
        Workspace(tmp_path / "h", store="sqlite:///somewhere.db")


def test_a_missing_database_is_refused_in_one_line(
    tmp_path: Path, postgres_server: PostgresServer
) -> None:
    url = postgres_server.url.rsplit("/", 1)[0] + "/no_such_database"
    (tmp_path / "h").mkdir()
    stderr = _one_line_failure(run_cli("--store", url, "keys", home=tmp_path / "h"))
    assert "no_such_database" in stderr and "does not exist" in stderr


def test_a_wrong_password_is_refused_in_one_line_without_it(
    tmp_path: Path, postgres_server: PostgresServer
) -> None:
    postgres_server.add_password_role("ann", "right-pw")
    url = postgres_server.url.replace("postgres@", "ann:wrong-pw@", 1)
    (tmp_path / "h").mkdir()
    stderr = _one_line_failure(run_cli("--store", url, "keys", home=tmp_path / "h"))
    assert "password authentication failed" in stderr
    assert "wrong-pw" not in stderr and "ann:***@" in stderr


def test_environment_variable_and_option_choose_the_same_store(
    tmp_path: Path, fresh_database: str
) -> None:
    keys = Workspace(tmp_path / "a", store=fresh_database).keys()
    (tmp_path / "b").mkdir()
    (tmp_path / "c").mkdir()
    by_env = run_cli("keys", home=tmp_path / "b", env={"NOTEBOOK_KIT_STORE": fresh_database})
    by_option = run_cli("--store", fresh_database, "keys", home=tmp_path / "c")
    expected = "".join(f"{stage} {key}\n" for stage, key in keys.items())
    assert by_env.stdout == by_option.stdout == expected
    assert not (tmp_path / "c" / "workspace.sqlite3").exists()
    # No URL: the SQLite file in the workspace, as always.
    assert run_cli("keys", home=tmp_path / "c", env={"NOTEBOOK_KIT_STORE": ""}).stdout != expected


def test_serve_start_line_masks_the_password(
    tmp_path: Path, postgres_server: PostgresServer
) -> None:
    # The test server trusts every login, so any password gets in.
    url = postgres_server.create_database().replace("postgres@", "postgres:hunter2-pw@")
    port = free_port()
    (tmp_path / "h").mkdir()
    command = [sys.executable, "-m", "notebook_kit", "--home", str(tmp_path / "h")]
    process = subprocess.Popen(
        [*command, "--store", url, "serve", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        httpx.get(f"http://127.0.0.1:{port}/", timeout=5)  # serving: signals are handled
    finally:
        process.terminate()
        _, errors = process.communicate(timeout=20)
    assert "postgres:***@" in line and "hunter2-pw" not in line, line
    assert "hunter2-pw" not in errors


# -- store copy --------------------------------------------------------------------------


def _calculate(server: ServerProcess, key: str) -> tuple[int, str]:
    answer = httpx.post(
        f"{server.url}/prod/restapi_sample/calculator", content=CALC, headers={"x-api-key": key}
    )
    return answer.status_code, answer.text


def _snapshot(ws: Workspace) -> tuple[object, ...]:
    """What a copy must carry over, as comparable values."""
    return (
        ws.applications(),
        ws.definitions(),
        ws.store.examples.list(),
        ws.deployments(),
        ws.keys(),
        ws.store.stored_settings(),
        ws.users().all_users(),
        ws.users().all_groups(),
        ws.request_log(),
        ws.store.action_stats(),
        {stage: ws.live(stage) for stage in ("dev", "prod")},
    )


def test_copy_moves_a_sqlite_workspace_into_postgres_and_serves_the_same(
    tmp_path: Path, sample_workspace: Workspace, fresh_database: str
) -> None:
    ws = sample_workspace
    ws.rotate_key("prod")
    ws.set_setting("request_log_size", "500")
    ws.users().create_user({"email": "ann@x.org", "name": "Ann", "groups": []})
    ws.users().create_group({"name": "staff"})
    ws.users().add_users({"groupName": "staff", "emails": ["ann@x.org"]})
    ws.edit("restapi_sample", "calculator", label="Calc v2")
    sum_body = '{"arg1": 1, "arg2": 2, "operation": "plus"}'
    ws.add_example("restapi_sample", "calculator", "sum", request={"body": sum_body},
                   expect={"json": {"$": 3}})  # fmt: skip
    assert ws.deploy("restapi_sample", "dev").checks_summary() == "1 pass"
    ws.rollback("restapi_sample", "dev")
    local = ServerProcess(ws.home).start()
    try:
        before = _calculate(local, ws.keys()["prod"])
    finally:
        local.stop()
    assert before == (200, "3")
    copied = run_cli("store", "copy", "--to", fresh_database, home=ws.home)
    assert copied.returncode == 0, copied.stderr
    assert "copied" in copied.stdout and "3 deployments" in copied.stdout
    moved = Workspace(tmp_path / "node", store=fresh_database)
    assert _snapshot(moved) == _snapshot(ws)
    # New deployments continue after the copied ids.
    assert moved.deploy("restapi_sample", "prod").id == ws.deployments()[-1].id + 1
    node = ServerProcess(tmp_path / "node", store=fresh_database).start()
    try:
        assert _calculate(node, ws.keys()["prod"]) == before
        assert _calculate(node, "wrong")[0] == 403
    finally:
        node.stop()


def test_copy_into_a_non_empty_store_is_refused_and_changes_nothing(
    tmp_path: Path, sample_workspace: Workspace, fresh_database: str
) -> None:
    target = Workspace(tmp_path / "other", store=fresh_database)
    target.create_application("mine")
    before = _snapshot(target)
    result = run_cli("store", "copy", "--to", fresh_database, home=sample_workspace.home)
    stderr = _one_line_failure(result)
    assert "not empty" in stderr and "applications" in stderr
    assert _snapshot(target) == before


def test_copy_that_fails_half_way_writes_nothing(
    tmp_path: Path, sample_workspace: Workspace, fresh_database: str
) -> None:
    sample_workspace.users().create_user({"email": "ann@x.org", "name": "Ann"})
    target = Workspace(tmp_path / "other", store=fresh_database)
    before = _snapshot(target)
    # The users arrive after the applications, definitions and deployments: make them fail.
    with psycopg.connect(fresh_database, autocommit=True) as conn:
        conn.execute("ALTER TABLE users ADD COLUMN extra TEXT NOT NULL")
    result = run_cli("store", "copy", "--to", fresh_database, home=sample_workspace.home)
    assert "extra" in _one_line_failure(result)
    assert _snapshot(target) == before

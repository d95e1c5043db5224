"""``notebook-kit example add|list|remove|postman``, ``check`` and ``deploy --force``: the
real command in a separate process over a real workspace."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

from support.processes import run_cli

from notebook_kit.workspace.workspace import Workspace

Run = Callable[..., subprocess.CompletedProcess[str]]
APP = "restapi_sample"


def _add_bob(cli: Run, name: str = "Bob Tanaka") -> None:
    cli(
        *("example", "add", APP, "employee", "bob", "--path-param", "id=E002"),
        *("--json-field", f"name={name}", "--json-field", "age=45", "--max-ms", "5000"),
        *("--header", "Accept: application/json", "--replace"),
    )


def test_example_add_list_remove(cli: Run, sample_workspace: Workspace) -> None:
    added = cli(
        *("example", "add", APP, "calculator", "sum", "--status", "200"),
        *("--body", '{"arg1": 1, "arg2": 2, "operation": "plus"}', "--json-field", "$=3"),
    )
    assert added.stdout == f"saved example calculator/sum of {APP}: expects 200 and 1 JSON field\n"
    _add_bob(cli)
    listed = cli("example", "list", APP).stdout.splitlines()
    assert listed[0].split() == ["API_ID", "NAME", "STATUS", "JSON", "MAX_MS"]
    assert listed[1].split() == ["calculator", "sum", "200", "$=3"]
    assert listed[2].split()[:4] == ["employee", "bob", "200", 'name="Bob']
    as_json = json.loads(cli("example", "list", APP, "--api-id", "employee", "--json").stdout)
    assert as_json == [e.to_dict() for e in sample_workspace.examples(APP, "employee")]
    assert as_json[0]["request"]["headers"] == {"Accept": "application/json"}
    removed = cli("example", "remove", APP, "employee", "bob")
    assert removed.stdout == f"removed example employee/bob of {APP}\n"
    assert [e.name for e in sample_workspace.examples(APP)] == ["sum"]


def test_check_exit_codes_and_lines(cli: Run, sample_workspace: Workspace) -> None:
    home = sample_workspace.home
    none = cli("check", APP)
    assert none.stdout == f"{APP} has no examples: nothing to check\n"
    _add_bob(cli)
    passing = cli("check", APP, "--stage", "prod")
    assert passing.stdout == f"all 1 example of {APP} pass on what prod serves\n"
    _add_bob(cli, "Bobby")
    cli(*("example", "add", APP, "employee", "gone", "--path-param", "id=E999"))
    failing = run_cli("check", APP, home=home)
    assert failing.returncode == 1
    assert failing.stdout.splitlines() == [
        'FAIL employee/bob: name is "Bob Tanaka", expected "Bobby"',
        "FAIL employee/gone: status 404, expected 200",
    ]
    assert failing.stderr == ""
    report = run_cli("check", APP, "--json", home=home)
    assert report.returncode == 1
    assert json.loads(report.stdout)["failed"] == 2


def test_check_refusals_are_one_line(sample_workspace: Workspace) -> None:
    home = sample_workspace.home
    for args, message in [
        (("check", "nope"), "notebook-kit: no application 'nope'\n"),
        (
            ("example", "add", APP, "employee", "x"),
            "notebook-kit: example employee/x: give a value for the path parameter {id}\n",
        ),
        (
            ("example", "add", APP, "employee", "x", "--path-param", "id"),
            "notebook-kit: --path-param 'id' must be written NAME=VALUE\n",
        ),
        (
            ("example", "add", APP, "calculator", "x", "--json-field", "total"),
            "notebook-kit: JSON field 'total' must look like PATH=VALUE, "
            "such as name=Alice or items.0.age=34\n",
        ),
        (
            ("example", "add", APP, "calculator", "x", "--max-ms", "-1"),
            "notebook-kit: the maximum duration must be milliseconds, more than 0 and at "
            "most 3600000, not '-1'\n",
        ),
        (
            ("example", "remove", APP, "employee", "x"),
            f"notebook-kit: definition 'employee' of '{APP}' has no example 'x'\n",
        ),
    ]:
        result = run_cli(*args, home=home)
        assert (result.returncode, result.stderr, result.stdout) == (1, message, ""), args
    assert sample_workspace.examples(APP) == []


def test_deploy_refused_then_forced(cli: Run, sample_workspace: Workspace) -> None:
    home = sample_workspace.home
    _add_bob(cli, "Bobby")
    before = sample_workspace.deployments(APP)
    refused = run_cli("deploy", APP, "--stage", "dev", home=home)
    assert refused.returncode == 1
    assert refused.stderr == (
        f"notebook-kit: deploy of {APP} to dev refused, nothing changed: example employee/bob "
        'fails: name is "Bob Tanaka", expected "Bobby" (force=True, CLI --force, deploys anyway)\n'
    )
    assert sample_workspace.deployments(APP) == before
    forced = cli("deploy", APP, "--stage", "dev", "--force").stdout.splitlines()
    assert forced[1:3] == [
        f"  forced past failing examples: 1 of 1 example of {APP} fail on the snapshot "
        "deployed to dev",
        '  FAIL employee/bob: name is "Bob Tanaka", expected "Bobby"',
    ]
    table = cli("deployments", "--app", APP).stdout.splitlines()
    assert table[0].split()[-1] == "EXAMPLES"
    assert table[-1].endswith("1 of 1 fail, forced")
    history = json.loads(cli("deployments", "--app", APP, "--json").stdout)
    assert history[-1]["forced"] is True
    assert history[-1]["checks"]["results"][0]["passed"] is False
    _add_bob(cli)
    passed = cli("deploy", APP, "--stage", "prod").stdout.splitlines()
    assert passed[1] == f"  examples: all 1 example of {APP} pass on the snapshot deployed to prod"


def _converted(path: Path) -> Path:
    """A collection as openapi-to-postmanv2 converts the sample's document (its one GET)."""
    request = {
        "method": "GET",
        "url": {
            "path": ["employee", ":id"],
            "host": ["{{baseUrl}}"],
            "variable": [{"key": "id", "value": "<string>"}],
        },
        "header": [{"key": "Accept", "value": "application/json"}],
    }
    path.write_text(json.dumps({"info": {"name": APP}, "item": [{"request": request}]}))
    return path


def test_example_postman_adds_tests(cli: Run, tmp_path: Path) -> None:
    _add_bob(cli)
    cli("example", "add", APP, "calculator", "sum", "--body", "{}", "--status", "400")
    collection = _converted(tmp_path / "sample.postman.json")
    added = cli("example", "postman", APP, str(collection), "--stage", "dev")
    assert added.stdout.splitlines() == [
        f"added 1 example of {APP} to {collection} as tests",
        "left out (their operation is not in the collection): calculator/sum",
    ]
    folder = json.loads(collection.read_text())["item"][-1]
    assert [item["name"] for item in folder["item"]] == ["employee/bob"]
    elsewhere = tmp_path / "tested.json"
    cli("example", "postman", APP, str(collection), "--stage", "dev", "-o", str(elsewhere))
    assert json.loads(elsewhere.read_text()) == json.loads(collection.read_text())


def test_example_postman_refusals_are_one_line(sample_workspace: Workspace, tmp_path: Path) -> None:
    home = sample_workspace.home
    collection = _converted(tmp_path / "c.json")
    (tmp_path / "broken.json").write_text("{")
    (tmp_path / "list.json").write_text("[]")
    sample_workspace.undeploy(APP, "prod")
    for args, message in [
        (("nope", str(collection), "--stage", "dev"), "application 'nope' is not deployed to dev"),
        ((APP, str(collection), "--stage", "prod"), f"application '{APP}' is not deployed"),
        ((APP, str(tmp_path / "none.json"), "--stage", "dev"), "cannot read the collection file"),
        ((APP, str(tmp_path / "broken.json"), "--stage", "dev"), "broken.json is not JSON"),
        ((APP, str(tmp_path / "list.json"), "--stage", "dev"), "not a Postman collection"),
    ]:
        result = run_cli("example", "postman", *args, home=home)
        assert result.returncode == 1, args
        assert message in result.stderr and len(result.stderr.splitlines()) == 1, result.stderr

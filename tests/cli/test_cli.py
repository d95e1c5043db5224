"""The CLI contract (issue 2, section 8), through the real ``notebook-kit`` process.

Outside tools depend on this: command names, flags, ``--json`` shapes, ``keys`` lines,
exit codes (0 done, 1 refused, 2 usage) and one-line errors on stderr without traceback.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest
from dulwich.repo import Repo
from support.processes import run_cli

from notebook_kit import Workspace
from notebook_kit.cli.main import main
from notebook_kit.domain.models import Constant

Result = subprocess.CompletedProcess[str]

ACTION = "res.body = {'id': req.pathParameters['id'], 'rate': str(const.RATE)}\n"
FUNCTIONS = "def double(x):\n    return 2 * x\n"


def dump(home: Path) -> list[str]:
    with closing(sqlite3.connect(home / "workspace.sqlite3")) as conn:
        return list(conn.iterdump())


def ok(result: Result) -> str:
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    return result.stdout


def refused(result: Result, code: int = 1) -> str:
    """Assert the error contract and return the one stderr line."""
    output = result.stdout + result.stderr
    assert "Traceback" not in output, output
    assert result.returncode == code, output
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("notebook-kit: ")
    return lines[0]


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    folder = tmp_path / "files"
    folder.mkdir()
    contents = {
        "action.py": ACTION,
        "action2.py": "res.body = 'v2'\n",
        "functions.py": FUNCTIONS,
        "bad_action.py": "x = 1\nif x\n    pass\n",
        "bad_functions.py": "def f(:\n",
    }
    for name, text in contents.items():
        (folder / name).write_text(text)
    return {name: folder / name for name in contents}


@pytest.fixture
def home(sample_workspace: Workspace) -> Path:
    """A workspace home with the sample installed (in-process, to save a process)."""
    sample_workspace.create(
        "shop",
        "item",
        label="Get item",
        method="GET",
        resource="items/{id}",
        action=ACTION,
        constants=[Constant("RATE", "Decimal", "0.5")],
    )
    return sample_workspace.home


def nk(home: Path, *args: str) -> Result:
    return run_cli(*args, home=home)


# -- sample and keys -------------------------------------------------------------------


def test_sample_installs_and_keys_prints_one_line_per_stage(tmp_path: Path) -> None:
    home = tmp_path / "fresh"
    assert "restapi_sample" in ok(nk(home, "--create", "sample"))
    ws = Workspace(home)
    deployments = ws.deployments()
    assert ws.resources()["dev"] == {"total": 5, "apps": {"restapi_sample": 4}}
    out = ok(nk(home, "keys"))
    keys = ws.keys()
    assert out == f"dev {keys['dev']}\nprod {keys['prod']}\n"
    assert re.fullmatch(r"dev [A-Za-z0-9]{40}\nprod [A-Za-z0-9]{40}\n", out)
    ok(nk(home, "sample"))  # idempotent: no new deployment
    assert ws.deployments() == deployments


def test_keys_rotate_replaces_only_that_stage(home: Path) -> None:
    before = Workspace(home).keys()
    out = ok(nk(home, "keys", "--rotate", "dev"))
    after = Workspace(home).keys()
    assert out == f"dev {after['dev']}\nprod {after['prod']}\n"
    assert after["dev"] != before["dev"] and after["prod"] == before["prod"]


# -- definitions -----------------------------------------------------------------------


def test_create_with_every_flag(home: Path, files: dict[str, Path]) -> None:
    out = ok(
        nk(
            home,
            "create",
            "billing",
            "invoice",
            "--label",
            "Invoice",
            "--method",
            "post",
            "--resource",
            "/invoices/{id}/",
            "--action-file",
            str(files["action.py"]),
            "--content-type",
            "application/json",
            "--no-auth",
            "--functions-file",
            str(files["functions.py"]),
            "--const",
            "RATE:Decimal=0.25",
            "--const",
            'CFG:JSON={"a": [1]}',
        )
    )
    assert "billing/invoice" in out
    d = Workspace(home).get("billing", "invoice")
    assert (d.label, d.method, d.resource, d.content_type) == (
        "Invoice",
        "POST",
        "invoices/{id}",
        "application/json",
    )
    assert d.requires_auth is False
    assert d.action == ACTION and d.functions == FUNCTIONS
    assert [c.to_dict() for c in d.constants] == [
        {"name": "RATE", "type": "Decimal", "value": "0.25"},
        {"name": "CFG", "type": "JSON", "value": {"a": [1]}},
    ]


def test_create_requires_auth_by_default_and_with_auth(home: Path, files: dict[str, Path]) -> None:
    common = ["--method", "GET", "--action-file", str(files["action2.py"])]
    ok(nk(home, "create", "shop", "a", "--label", "A", "--resource", "a", *common))
    ok(nk(home, "create", "shop", "b", "--label", "B", "--resource", "b", "--auth", *common))
    ws = Workspace(home)
    assert ws.get("shop", "a").requires_auth is True
    assert ws.get("shop", "b").requires_auth is True


def test_edit_with_every_flag_including_new_id(home: Path, files: dict[str, Path]) -> None:
    ok(
        nk(
            home,
            "edit",
            "shop",
            "item",
            "--new-id",
            "item_v2",
            "--label",
            "Item v2",
            "--method",
            "PUT",
            "--resource",
            "things/{key}",
            "--action-file",
            str(files["action2.py"]),
            "--content-type",
            "text/plain",
            "--no-auth",
            "--functions-file",
            str(files["functions.py"]),
            "--const",
            "N:Integer=3",
        )
    )
    ws = Workspace(home)
    assert [d.id for d in ws.definitions("shop")] == ["item_v2"]
    d = ws.get("shop", "item_v2")
    assert (d.label, d.method, d.resource, d.content_type, d.requires_auth) == (
        "Item v2",
        "PUT",
        "things/{key}",
        "text/plain",
        False,
    )
    assert d.action == "res.body = 'v2'\n" and d.functions == FUNCTIONS
    assert d.constants == (Constant("N", "Integer", 3),)


def test_edit_changes_only_what_is_given(home: Path) -> None:
    before = Workspace(home).get("shop", "item")
    ok(nk(home, "edit", "shop", "item", "--label", "Renamed"))
    after = Workspace(home).get("shop", "item")
    assert after.label == "Renamed"
    assert after.with_changes(label=before.label).to_dict() | {
        "updated_at": None
    } == before.to_dict() | {"updated_at": None}


def test_delete_removes_definition(home: Path) -> None:
    assert "deleted shop/item" in ok(nk(home, "delete", "shop", "item"))
    assert Workspace(home).definitions("shop") == []


def test_copy_to_other_application(home: Path) -> None:
    ok(nk(home, "copy", "shop", "item", "--to", "backoffice"))
    ws = Workspace(home)
    assert ws.get("backoffice", "item").action == ws.get("shop", "item").action
    before = dump(home)
    line = refused(nk(home, "copy", "shop", "item", "--to", "backoffice"))
    assert "already has a definition 'item'" in line
    assert dump(home) == before


def test_list_json_shape(home: Path) -> None:
    rows = json.loads(ok(nk(home, "list", "--json")))
    assert isinstance(rows, list) and len(rows) == 5
    for row in rows:
        assert {"app", "id", "label", "method", "resource", "content_type", "requires_auth"} <= set(
            row
        )
        assert isinstance(row["requires_auth"], bool)
    item = next(r for r in rows if r["app"] == "shop")
    assert item | {"dev": None, "prod": None} == {
        "app": "shop",
        "id": "item",
        "label": "Get item",
        "method": "GET",
        "resource": "items/{id}",
        "content_type": None,
        "requires_auth": True,
        "dev": None,
        "prod": None,
    }


def test_list_filters_by_app_and_label(home: Path) -> None:
    rows = json.loads(
        ok(nk(home, "list", "--app", "restapi_sample", "--label", "PREFLIGHT", "--json"))
    )
    assert sorted(r["id"] for r in rows) == ["calculator-preflight", "employee-preflight"]


def test_list_prints_a_table_for_people(home: Path) -> None:
    Workspace(home).deploy("shop", "dev")
    lines = ok(nk(home, "list", "--app", "shop")).splitlines()
    header = ["APP", "ID", "METHOD", "RESOURCE", "LABEL", "REQUIRES_AUTH", "DEV", "PROD"]
    assert lines[0].split() == header
    assert lines[1].split()[:4] == ["shop", "item", "GET", "items/{id}"]
    assert lines[1].split()[-3:] == ["deployed", "not", "deployed"]  # DEV, PROD as --json


def test_list_says_what_is_live_after_a_rename(home: Path) -> None:
    Workspace(home).deploy("shop", "dev")
    ok(nk(home, "edit", "shop", "item", "--new-id", "item2"))
    rows = json.loads(ok(nk(home, "list", "--app", "shop", "--json")))
    assert [(r["id"], r["dev"], r["prod"]) for r in rows] == [
        ("item2", "live as item", "not deployed")
    ]
    assert (
        ok(nk(home, "list", "--app", "shop")).splitlines()[1].endswith("live as item  not deployed")
    )
    ok(nk(home, "deploy", "shop", "--stage", "dev"))
    assert json.loads(ok(nk(home, "list", "--app", "shop", "--json")))[0]["dev"] == "deployed"


# -- deploy, undeploy, rollback, deployments, resources --------------------------------


def test_deploy_prints_endpoint_urls(home: Path) -> None:
    out = ok(nk(home, "deploy", "shop", "--stage", "prod"))
    assert "deployed shop to prod" in out
    assert "http://127.0.0.1:8000/prod/shop/items/{id}" in out
    assert "shop" in Workspace(home).live("prod")


def test_undeploy_then_rollback_restores(home: Path) -> None:
    ws = Workspace(home)
    ok(nk(home, "undeploy", "restapi_sample", "--stage", "dev"))
    assert "restapi_sample" not in ws.live("dev")
    out = ok(nk(home, "rollback", "restapi_sample", "--stage", "dev"))
    assert "now serves deployment" in out
    assert "restapi_sample" in ws.live("dev")


def test_rollback_to_a_deployment(home: Path) -> None:
    ws = Workspace(home)
    first = ws.deploy("shop", "dev")
    ws.edit("shop", "item", label="v2")
    ws.deploy("shop", "dev")
    out = ok(nk(home, "rollback", "shop", "--stage", "dev", "--to", str(first.id)))
    assert f"deployment {first.id}" in out
    assert [d.label for d in ws.live("dev")["shop"]] == ["Get item"]


def test_deployments_json_shape(home: Path) -> None:
    Workspace(home).deploy("shop", "dev")
    rows = json.loads(ok(nk(home, "deployments", "--json")))
    assert [(r["app"], r["stage"], r["active"]) for r in rows] == [
        ("restapi_sample", "dev", True),
        ("restapi_sample", "prod", True),
        ("shop", "dev", True),
    ]
    for row in rows:
        assert {"id", "app", "stage", "deployed_at", "active"} <= set(row)
        assert isinstance(row["id"], int) and isinstance(row["active"], bool)
    only = json.loads(ok(nk(home, "deployments", "--app", "shop", "--json")))
    assert [r["app"] for r in only] == ["shop"]


def test_deployments_table_for_people(home: Path) -> None:
    lines = ok(nk(home, "deployments")).splitlines()
    header = ["ID", "APP", "STAGE", "DEPLOYED_AT", "HOST", "ACTIVE", "DESCRIPTION", "EXAMPLES"]
    assert lines[0].split() == header
    assert len(lines) == 3


def test_resources_json_exact_shape(home: Path) -> None:
    data = json.loads(ok(nk(home, "resources", "--json")))
    expected = {"total": 5, "apps": {"restapi_sample": 4}}
    assert data == {"dev": expected, "prod": expected}


def test_resources_for_people_shows_totals_and_tree(home: Path) -> None:
    out = ok(nk(home, "resources"))
    assert "dev: 5 resources" in out and "prod: 5 resources" in out
    assert "/{id} (GET, OPTIONS)" in out


# -- export, import, commit ------------------------------------------------------------


def test_export_import_round_trip_and_replace(home: Path, tmp_path: Path) -> None:
    target = tmp_path / "shop.json"
    ok(nk(home, "export", "shop", "--output", str(target)))
    assert json.loads(target.read_text())["format"] == "notebook-kit/1"
    fresh = tmp_path / "fresh"
    assert "imported shop" in ok(nk(fresh, "--create", "import", str(target)))
    original, imported = Workspace(home).get("shop", "item"), Workspace(fresh).get("shop", "item")
    assert imported.action == original.action and imported.constants == original.constants
    before = dump(fresh)
    line = refused(nk(fresh, "import", str(target)))
    assert "already exists" in line and "replace" in line
    assert dump(fresh) == before
    Workspace(fresh).edit("shop", "item", label="local change")
    ok(nk(fresh, "import", str(target), "--replace"))
    assert Workspace(fresh).get("shop", "item").label == "Get item"


def test_commit_writes_repository(home: Path, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    out = ok(nk(home, "commit", "shop", "--repo", str(repo), "--message", "First"))
    assert "committed shop" in out
    with Repo(str(repo)) as r:
        head = r[r.head()]
        assert head.message == b"First"
    assert (repo / "shop" / "item" / "action.py").read_text() == ACTION
    line = refused(nk(home, "commit", "shop", "--repo", str(repo), "--message", "Again"))
    assert "nothing to commit" in line


# -- the workspace location ------------------------------------------------------------


def test_home_option_wins_over_environment(home: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    ok(run_cli("--home", str(other), "--create", "sample", home=home))
    assert (other / "workspace.sqlite3").exists()
    assert Workspace(other).keys() != Workspace(home).keys()
    out = ok(run_cli("--home", str(other), "keys", home=home))
    assert Workspace(other).keys()["dev"] in out


def test_environment_names_the_workspace(tmp_path: Path) -> None:
    home = tmp_path / "env_home"
    ok(run_cli("--create", "keys", home=home))  # run_cli sets NOTEBOOK_KIT_HOME
    assert (home / "workspace.sqlite3").exists()
    out = ok(run_cli("keys", home=home))  # it exists now: no --create needed
    assert Workspace(home).keys()["dev"] in out


@pytest.mark.parametrize("how", ["--home", "NOTEBOOK_KIT_HOME"])
@pytest.mark.parametrize("command", [["keys"], ["list"], ["sample"], ["settings", "list"]])
def test_a_named_home_that_does_not_exist_is_refused(
    tmp_path: Path, how: str, command: list[str]
) -> None:
    """A mistyped home makes no workspace (and mints no keys): one line naming the path
    and --create, exit 1, nothing created."""
    typo = tmp_path / "wrokspace"
    if how == "--home":
        result = run_cli("--home", str(typo), *command, home=tmp_path / "unused")
    else:
        result = run_cli(*command, home=typo)
    line = refused(result)
    assert line == (
        f"notebook-kit: the workspace directory {typo} does not exist "
        "(add --create to make a new workspace there)"
    )
    assert list(tmp_path.iterdir()) == []


def test_the_default_home_is_made_on_first_use(tmp_path: Path) -> None:
    """No --home, no NOTEBOOK_KIT_HOME: ~/.notebook_kit is made, as before."""
    env = {k: v for k, v in os.environ.items() if k != "NOTEBOOK_KIT_HOME"}
    result = subprocess.run(
        [sys.executable, "-m", "notebook_kit", "keys"],
        env={**env, "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert Workspace(tmp_path / ".notebook_kit").keys()["dev"] in result.stdout


# -- help ------------------------------------------------------------------------------


def test_help_lists_every_contract_command(tmp_path: Path) -> None:
    out = ok(run_cli("--help", home=tmp_path / "h"))
    for command in [
        "sample",
        "keys",
        "serve",
        "create",
        "edit",
        "delete",
        "copy",
        "list",
        "deploy",
        "undeploy",
        "rollback",
        "deployments",
        "resources",
        "export",
        "import",
        "commit",
    ]:
        assert re.search(rf"^\s+{command}\b", out, re.MULTILINE), command


@pytest.mark.parametrize("before", [[], ["--home", "somewhere"]])
def test_no_command_prints_the_help_as_help_does_and_exits_2(
    tmp_path: Path, before: list[str]
) -> None:
    """Bare ``notebook-kit``: the full, multi-line help on stdout (as ``--help`` prints
    it), exit 2 since nothing was done; and no workspace is made."""
    bare = run_cli(*before, home=tmp_path / "h")
    assert bare.returncode == 2, bare.stderr
    assert bare.stderr == ""
    assert bare.stdout == ok(run_cli("--help", home=tmp_path / "h"))
    assert bare.stdout.startswith("Usage: notebook-kit [OPTIONS] COMMAND [ARGS]...\n")
    assert len(bare.stdout.splitlines()) > 20
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("group", ["settings", "consumer", "contract", "store", "secret"])
def test_a_group_without_its_command_prints_its_help_whole_and_exits_2(
    tmp_path: Path, group: str
) -> None:
    """``notebook-kit settings``: the group's multi-line help on stdout (as its ``--help``
    prints it), not squashed into one error line; exit 2, nothing was done."""
    bare = run_cli(group, home=tmp_path / "h")
    assert bare.returncode == 2 and bare.stderr == ""
    assert bare.stdout == ok(run_cli(group, "--help", home=tmp_path / "h"))
    assert bare.stdout.startswith(f"Usage: notebook-kit {group} [OPTIONS] COMMAND [ARGS]...\n")


def test_serve_help_shows_its_options(tmp_path: Path) -> None:
    out = ok(run_cli("serve", "--help", home=tmp_path / "h"))
    for option in ("--host", "--port", "--workers"):
        assert option in out


# -- refusals: one stderr line, exit 1 (2 for usage), nothing changed -------------------

# ``create shop x`` with every required option but the two a row varies.
CREATE_X = ["create", "shop", "x", "--label", "X", "--method", "GET"]

ERRORS: list[tuple[str, list[str], int, str]] = [
    (
        "unknown application",
        ["deploy", "nope", "--stage", "dev"],
        1,
        "no application 'nope'",
    ),
    (
        "bad resource",
        [*CREATE_X, "--resource", "a/{b", "--action-file", "{action2.py}"],
        1,
        "resource segment 2 '{b' has an unclosed brace",
    ),
    (
        "action syntax error",
        [*CREATE_X, "--resource", "x", "--action-file", "{bad_action.py}"],
        1,
        "action line 2",
    ),
    (
        "functions syntax error",
        ["edit", "shop", "item", "--functions-file", "{bad_functions.py}"],
        1,
        "functions line 1",
    ),
    (
        "missing action file",
        [*CREATE_X, "--resource", "x", "--action-file", "{missing.py}"],
        1,
        "cannot read the action file",
    ),
    (
        "bad constant",
        ["edit", "shop", "item", "--const", "N:Integer=ten"],
        1,
        "constant N: 'ten' is not an Integer",
    ),
    ("edit unknown", ["edit", "shop", "nope", "--label", "x"], 1, "no definition 'nope'"),
    ("delete unknown", ["delete", "shop", "nope"], 1, "no definition 'nope'"),
    ("undeploy not deployed", ["undeploy", "shop", "--stage", "prod"], 1, "not deployed to prod"),
    (
        "rollback nothing earlier",
        ["rollback", "restapi_sample", "--stage", "dev"],
        1,
        "no earlier deployment",
    ),
    ("commit empty message", ["commit", "shop", "--repo", "{repo}", "--message", " "], 1, "needs"),
    ("import malformed", ["import", "{malformed.json}"], 1, "invalid JSON"),
    ("import nested too deep", ["import", "{deep.json}"], 1, "nested too deeply to read"),
    ("import other type", ["import", "{workflow.json}"], 1, "only applications of type"),
    (
        "export to missing folder",
        ["export", "shop", "--output", "{missing}/x.json"],
        1,
        "cannot write",
    ),
    ("bad method", ["edit", "shop", "item", "--method", "PATCH"], 2, "'PATCH' is not one of"),
    ("bad stage", ["deploy", "shop", "--stage", "test"], 2, "'test' is not one of 'dev', 'prod'"),
    ("missing option", ["deploy", "shop"], 2, "Missing option '--stage'"),
    ("unknown command", ["publish", "shop"], 2, "No such command 'publish'"),
    ("rollback to not a number", ["rollback", "shop", "--stage", "dev", "--to", "x"], 2, "'x'"),
]


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [e[1:] for e in ERRORS],
    ids=[e[0] for e in ERRORS],
)
def test_refusal_is_one_line_with_exit_code_and_changes_nothing(
    home: Path, files: dict[str, Path], tmp_path: Path, args: list[str], code: int, message: str
) -> None:
    (tmp_path / "files" / "malformed.json").write_text('{"format": "notebook-kit/1", "appl')
    (tmp_path / "files" / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    workflow = Workspace(home).export("shop") | {"application": {"id": "wf", "type": "Workflow"}}
    (tmp_path / "files" / "workflow.json").write_text(json.dumps(workflow))
    names = {p.name: str(p) for p in (tmp_path / "files").iterdir()}
    names |= {"repo": str(tmp_path / "repo"), "missing": str(tmp_path / "missing")}
    names["missing.py"] = str(tmp_path / "missing.py")
    argv = [re.sub(r"\{([\w.]+)\}", lambda m: names.get(m[1], m[0]), arg) for arg in args]
    before = dump(home)
    line = refused(nk(home, *argv), code)
    assert message in line
    assert dump(home) == before
    assert not (tmp_path / "repo").exists()


def test_refusal_when_home_is_a_file(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    line = refused(run_cli("keys", home=blocker))
    assert line.endswith(
        f"the workspace directory {blocker} is not a directory "
        "(add --create to make a new workspace there)"
    )
    line = refused(run_cli("--create", "keys", home=blocker))
    assert "cannot use" in line and "workspace directory" in line


# -- more branches in-process (same entry point, no process start-up cost) -------------


def run_main(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exited:
        main(list(args))
    captured = capsys.readouterr()
    code = exited.value.code
    return (0 if code is None else int(code)), captured.out, captured.err


def test_edit_with_empty_content_type_clears_it(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = Workspace(home)
    ws.edit("shop", "item", content_type="application/json")
    code, out, _ = run_main(capsys, "--home", str(home), "edit", "shop", "item", "--label", "L")
    assert code == 0 and "deploy to make it live" in out
    assert ws.get("shop", "item").content_type == "application/json"
    code, _, _ = run_main(capsys, "--home", str(home), "edit", "shop", "item", "--content-type", "")
    assert code == 0
    assert ws.get("shop", "item").content_type is None


def test_list_of_nothing_says_none(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "empty").mkdir()
    code, out, err = run_main(capsys, "--home", str(tmp_path / "empty"), "list")
    assert (code, out, err) == (0, "(none)\n", "")
    code, out, _ = run_main(capsys, "--home", str(tmp_path / "empty"), "list", "--json")
    assert (code, json.loads(out)) == (0, [])


def test_edit_const_replaces_all_constants(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--home", str(home), "edit", "shop", "item", "--const", "A:Boolean=true"]
    code, _, _ = run_main(capsys, *args, "--const", "B:String=x y")
    assert code == 0
    constants = Workspace(home).get("shop", "item").constants
    assert constants == (Constant("A", "Boolean", True), Constant("B", "String", "x y"))


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["keys", "--rotate", "staging"], 2, "'staging' is not one of 'dev', 'prod'"),
        (["create", "shop", "x"], 2, "Missing option '--label'"),
        (["list", "--app", "nope"], 1, "no application 'nope'"),
        (["copy", "shop", "item"], 2, "Missing option '--to'"),
        (["rollback", "shop", "--stage", "dev", "--to", "999"], 1, "no deployment 999"),
    ],
)
def test_refusal_in_process_is_one_line(
    home: Path, capsys: pytest.CaptureFixture[str], args: list[str], code: int, message: str
) -> None:
    before = dump(home)
    got, out, err = run_main(capsys, "--home", str(home), *args)
    assert (got, out) == (code, "")
    assert err.count("\n") == 1 and err.startswith("notebook-kit: ") and message in err
    assert dump(home) == before


def test_deploy_description_shows_in_the_history(home: Path) -> None:
    out = ok(nk(home, "deploy", "shop", "--stage", "dev", "-m", "price fix"))
    assert "deployed shop to dev (deployment" in out and "): price fix" in out
    ok(nk(home, "deploy", "shop", "--stage", "dev", "--description", "second go"))
    rows = json.loads(ok(nk(home, "deployments", "--app", "shop", "--json")))
    assert [r["description"] for r in rows] == ["price fix", "second go"]
    lines = ok(nk(home, "deployments", "--app", "shop")).splitlines()
    assert lines[1].rstrip().endswith("price fix") and lines[2].endswith("second go")
    assert list(Workspace(home).deployments_frame("shop")["description"]) == [
        "price fix",
        "second go",
    ]


def test_deploy_description_of_two_lines_is_refused(home: Path) -> None:
    line = refused(nk(home, "deploy", "shop", "--stage", "dev", "-m", "a\nb"))
    assert "one line" in line
    assert Workspace(home).deployments("shop") == []

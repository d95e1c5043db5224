"""``notebook-kit contract show|set|infer|clear`` and ``--contract-file`` through the real
command: each refusal is one line on stderr, a non-zero exit and nothing changed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.processes import run_cli

from notebook_kit.workspace.workspace import Workspace

APP = "shop"
BODY = {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}


@pytest.fixture
def shop(workspace: Workspace) -> Workspace:
    workspace.create(APP, "add", label="Add", method="POST", resource="items",
                     action="res.statusCode = 201\nres.body = {'id': 'I1'}")  # fmt: skip
    request = {"headers": {"Content-Type": "application/json"}, "body": {"name": "pen"}}
    workspace.add_example(APP, "add", "pen", request=request, expect={"status": 201})
    return workspace


def test_set_show_and_clear(shop: Workspace, tmp_path: Path) -> None:
    home = shop.home
    schema = tmp_path / "body.json"
    schema.write_text(json.dumps(BODY))
    created = tmp_path / "created.json"
    created.write_text('{"type": "object", "required": ["id"]}')
    done = run_cli("contract", "set", APP, "add", "--query", "page:integer:required",
                   "--header", "x-tag:string", "--body-schema", str(schema),
                   "--response", f"201={created}", "--response", "404:text/plain",
                   home=home)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "contract of shop/add saved; live stages change at the next deploy",
        "IN      NAME   TYPE     REQUIRED  DESCRIPTION",
        "query   page   integer  True",
        "header  x-tag  string   False",
        "body: application/json, required, object with name",
        "response 201: application/json, object",
        "response 404: text/plain, no schema",
    ]
    saved = shop.contract(APP, "add").to_dict()
    assert [p["name"] for p in saved["parameters"]] == ["page", "x-tag"]
    assert saved["body"]["schema"] == BODY
    assert [r["status"] for r in saved["responses"]] == ["201", "404"]

    # a flag changes its part only; --json prints what was saved
    again = run_cli("contract", "set", APP, "add", "--query", "page:string", "--json", home=home)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["parameters"][1] == {
        "name": "page", "in": "query", "schema": {"type": "string"}, "required": False,
    }  # fmt: skip
    assert json.loads(again.stdout)["body"]["schema"] == BODY

    shown = run_cli("contract", "show", APP, "add", "--json", home=home)
    assert json.loads(shown.stdout) == shop.contract(APP, "add").to_dict()

    # a whole contract from stdin replaces it
    replaced = run_cli("contract", "set", APP, "add", "-", home=home,
                       input=json.dumps({"responses": {"201": {}}}))  # fmt: skip
    assert replaced.returncode == 0, replaced.stderr
    assert shop.contract(APP, "add").to_dict() == {"responses": [{"status": "201"}]}

    cleared = run_cli("contract", "clear", APP, "add", home=home)
    assert cleared.stdout == "contract of shop/add cleared; live stages change at the next deploy\n"
    assert shop.contract(APP, "add").is_empty
    assert run_cli("contract", "show", APP, "add", home=home).stdout == (
        "(nothing declared: every request reaches the action)\n"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["set", APP, "add", "--query", "page"], "--query 'page' must be NAME:TYPE"),
        (["set", APP, "add", "--query", "page:date"], "type 'date' is not one of"),
        (["set", APP, "add", "--body-schema", "/no/such.json"], "cannot read the body schema"),
        (["set", APP, "add", "-"], "is not JSON"),
        (["set", APP, "nope"], "no definition"),
        (["show", "nowhere", "add"], "no "),
    ],
)
def test_refusals_are_one_line_and_change_nothing(
    shop: Workspace, args: list[str], message: str
) -> None:
    before = shop.get(APP, "add")
    done = run_cli("contract", *args, home=shop.home, input="{")
    assert done.returncode == 1
    assert done.stderr.startswith("notebook-kit: ") and message in done.stderr
    assert len(done.stderr.splitlines()) == 1 and "Traceback" not in done.stderr
    assert shop.get(APP, "add") == before


def test_infer_prints_a_draft_and_saves_it_when_asked(shop: Workspace) -> None:
    printed = run_cli("contract", "infer", APP, "add", "--json", home=shop.home, check=True)
    draft = json.loads(printed.stdout)
    assert draft["body"]["schema"]["required"] == ["name"]
    assert draft["responses"][0]["status"] == "201"
    assert shop.contract(APP, "add").is_empty
    run_cli("contract", "infer", APP, "add", "--save", home=shop.home, check=True)
    assert shop.contract(APP, "add").to_dict() == draft


def test_create_and_edit_take_a_contract_file(workspace: Workspace, tmp_path: Path) -> None:
    action = tmp_path / "action.py"
    action.write_text("res.body = {'id': 1}\n")
    contract = tmp_path / "contract.json"
    contract.write_text(json.dumps({"parameters": [{"name": "q", "in": "query"}]}))
    run_cli("create", APP, "get", "--label", "Get", "--method", "GET", "--resource", "items",
            "--action-file", str(action), "--contract-file", str(contract),
            home=workspace.home, check=True)  # fmt: skip
    assert workspace.contract(APP, "get").parameters[0].name == "q"
    contract.write_text(json.dumps({"body": {}}))
    refused = run_cli("edit", APP, "get", "--contract-file", str(contract), home=workspace.home)
    assert refused.returncode == 1
    assert (
        refused.stderr == "notebook-kit: a GET takes no request body; only DELETE, POST, PUT do\n"
    )
    assert workspace.contract(APP, "get").parameters[0].name == "q"

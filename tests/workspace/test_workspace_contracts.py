"""Contracts through the Workspace: declared, edited and cleared; carried by export,
import, copy and commit; test runs get the 422 a caller would; a deploy is refused when an
example's answer breaks its declared response; a draft from the examples."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from dulwich.repo import Repo

from notebook_kit.domain.answers import REJECTED
from notebook_kit.errors import ExampleFailedError, ValidationError
from notebook_kit.workspace.workspace import Workspace

APP = "shop"
ADD = """\
import json
item = json.loads(req.body)
res.statusCode = 201
res.body = {"id": "I" + str(item["n"]), "name": item["name"]}
"""
CONTRACT = {
    "parameters": [{"name": "dry", "in": "query", "type": "boolean"}],
    "body": {
        "schema": {
            "type": "object",
            "required": ["name", "n"],
            "properties": {"name": {"type": "string"}, "n": {"type": "integer", "minimum": 1}},
        }
    },
    "responses": {
        "201": {
            "schema": {
                "type": "object",
                "required": ["id", "name"],
                "properties": {"id": {"type": "string", "pattern": "^I[0-9]+$"}},
            }
        }
    },
}


@pytest.fixture
def shop(workspace: Workspace) -> Workspace:
    workspace.create(APP, "add", label="Add an item", method="POST", resource="items",
                     action=ADD, contract=CONTRACT)  # fmt: skip
    return workspace


def test_a_contract_is_saved_edited_and_cleared(shop: Workspace) -> None:
    assert shop.contract(APP, "add").to_dict()["body"]["schema"]["required"] == ["name", "n"]
    changed = {**CONTRACT, "parameters": [{"name": "dry", "in": "query", "type": "string"}]}
    shop.edit(APP, "add", label="Add", contract=changed)
    assert shop.contract(APP, "add").parameters[0].schema == {"type": "string"}
    assert shop.get(APP, "add").label == "Add"
    shop.edit(APP, "add", label="Add again")  # an edit without a contract keeps it
    assert not shop.contract(APP, "add").is_empty
    shop.edit(APP, "add", contract={})
    assert shop.contract(APP, "add").is_empty


def test_a_bad_contract_changes_nothing(shop: Workspace) -> None:
    before = shop.get(APP, "add")
    with pytest.raises(ValidationError, match="not a valid JSON Schema"):
        shop.edit(APP, "add", label="New", contract={"body": {"schema": {"type": 3}}})
    with pytest.raises(ValidationError, match="a GET takes no request body"):
        shop.edit(APP, "add", method="GET")
    assert shop.get(APP, "add") == before


def test_export_import_copy_and_commit_carry_the_contract(shop: Workspace, tmp_path: Path) -> None:
    declared = shop.contract(APP, "add")
    exported = tmp_path / "shop.json"
    shop.export_file(APP, exported)
    assert json.loads(exported.read_text())["definitions"][0]["contract"] == declared.to_dict()
    other_home = tmp_path / "other"
    other_home.mkdir()
    other = Workspace(other_home)
    other.import_application(exported)
    assert other.contract(APP, "add") == declared

    shop.copy(APP, "add", "store2", "add2")
    assert shop.contract("store2", "add2") == declared

    repo = tmp_path / "repo"
    sha = shop.commit(APP, repo, "with a contract").encode()
    with Repo(str(repo)) as git:
        tree = git[git[sha].tree]
        folder = git[tree[APP.encode()][1]]
        files = git[folder[b"add"][1]]
        blob = git[files[b"contract.json"][1]]
        assert json.loads(blob.data) == declared.to_dict()
    shop.edit(APP, "add", contract={})
    sha = shop.commit(APP, repo, "without").encode()
    with Repo(str(repo)) as git:
        folder = git[git[git[sha].tree][APP.encode()][1]]
        assert b"contract.json" not in git[folder[b"add"][1]]  # cleared: the file goes


def test_a_test_run_gets_the_422_a_caller_would(shop: Workspace) -> None:
    run = shop.invoke(APP, "add", query="dry=maybe", headers={"Content-Type": "application/json"},
                      body='{"name": 3, "n": 0}')  # fmt: skip
    assert (run.status, run.kind, run.content_type) == (422, REJECTED, "application/problem+json")
    problem = run.json()
    assert problem["status"] == 422 and problem["title"] == "Unprocessable Content"
    assert {(e["in"], e["pointer"], e["rule"]) for e in problem["errors"]} == {
        ("query", "/dry", "type"),
        ("body", "/name", "type"),
        ("body", "/n", "minimum"),
    }
    assert run.headers["Access-Control-Allow-Origin"] == "*"
    assert run.reason is not None and "did not run" in run.reason
    ok = shop.invoke(APP, "add", headers={"Content-Type": "application/json"},
                     body='{"name": "pen", "n": 2}')  # fmt: skip
    assert (ok.status, ok.json(), ok.contract) == (201, {"id": "I2", "name": "pen"}, ())


def test_a_deploy_is_refused_when_an_example_breaks_the_declared_response(
    shop: Workspace,
) -> None:
    request = {"headers": {"Content-Type": "application/json"}, "body": {"name": "pen", "n": 2}}
    shop.add_example(APP, "add", "pen", request=request, expect={"status": 201})
    shop.deploy(APP, "dev")  # the answer keeps its contract
    shop.edit(APP, "add", action=ADD.replace('"I" + str(item["n"])', 'item["n"]'))
    with pytest.raises(ExampleFailedError) as refused:
        shop.deploy(APP, "dev")
    (failure,) = refused.value.report.failures
    assert "the answer breaks its declared response: response /id" in failure.difference
    assert shop.live("dev")  # what was live stays live
    run = shop.invoke(APP, "add", headers=request["headers"], body=json.dumps(request["body"]))
    assert run.status == 201 and run.contract  # the answer is shown as it is, with the note


def test_a_draft_comes_from_the_examples_and_their_answers(shop: Workspace) -> None:
    headers = {"Content-Type": "application/json", "X-Tag": "a"}
    for name, n in (("one", 1), ("two", 2)):
        request = {"query": "dry=false", "headers": headers, "body": {"name": name, "n": n}}
        shop.add_example(APP, "add", name, request=request, expect={"status": 201})
    shop.edit(APP, "add", contract={})
    draft = shop.infer_contract(APP, "add").to_dict()
    assert shop.contract(APP, "add").is_empty  # a draft is not saved
    assert draft["parameters"] == [
        {"name": "dry", "in": "query", "schema": {"type": "boolean"}, "required": True},
        {"name": "x-tag", "in": "header", "schema": {"type": "string"}, "required": True},
    ]
    assert draft["body"]["schema"]["properties"] == {
        "name": {"type": "string"},
        "n": {"type": "integer"},
    }
    (created,) = draft["responses"]
    assert created["status"] == "201" and created["schema"]["required"] == ["id", "name"]
    shop.edit(APP, "add", contract=draft)  # a draft saves as it is
    assert shop.invoke(APP, "add", query="dry=false", headers=headers,
                       body='{"name": "x", "n": 5}').status == 201  # fmt: skip

"""The studio's Contract tab, driven from Python: what is declared shown, a draft inferred
from the examples (not saved), saved from the editor, a refusal as a status that changes
nothing, Clear asked with Cancel, and the tab following the definition open."""

from __future__ import annotations

import json

import pytest

from notebook_kit.notebook.ui.contract import ContractPanel
from notebook_kit.notebook.ui.studio import TAB_TITLES, Studio
from notebook_kit.workspace.workspace import Workspace

APP = "shop"


@pytest.fixture
def shop(workspace: Workspace) -> Workspace:
    workspace.create(APP, "get", label="Get", method="GET", resource="items/{id}",
                     action="res.body = {'id': req.pathParameters['id'], 'n': 1}")  # fmt: skip
    request = {"path_parameters": {"id": "7"}, "query": "full=true"}
    workspace.add_example(APP, "get", "seven", request=request, expect={"status": 200})
    return workspace


@pytest.fixture
def panel(shop: Workspace) -> ContractPanel:
    shown = ContractPanel(shop)
    shown.load(shop.get(APP, "get"))
    return shown


def test_nothing_declared_is_said_and_a_new_definition_has_no_contract_yet(
    panel: ContractPanel,
) -> None:
    assert "Nothing declared" in panel.summary.value
    assert json.loads(panel.editor.value) == {}
    panel.load(None)
    assert "Save the definition first" in panel.summary.value
    assert panel.save.disabled and panel.infer.disabled and panel.editor.read_only


def test_infer_fills_the_editor_and_save_keeps_it(shop: Workspace, panel: ContractPanel) -> None:
    panel.infer.click()
    draft = json.loads(panel.editor.value)
    assert {"name": "full", "in": "query", "schema": {"type": "boolean"}, "required": True} in (
        draft["parameters"]
    )
    assert draft["responses"][0]["schema"]["required"] == ["id", "n"]
    assert panel.status.text == "A draft from the examples and recorded calls: not saved yet"
    assert shop.contract(APP, "get").is_empty  # not saved yet
    panel.save.click()
    assert shop.contract(APP, "get").to_dict() == draft
    assert panel.status.text == "Contract saved; live stages change at the next deploy"
    summary = panel.summary.value
    assert "nk-contract-parameter" in summary and "full" in summary
    assert "Response 200: application/json, object {id, n}" in summary


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "the contract is not JSON"),
        ('{"body": {}}', "a GET takes no request body"),
        ('{"parameters": [{"name": "x", "in": "cookie"}]}', "is in one of query, header, path"),
    ],
)
def test_a_refusal_is_a_status_and_changes_nothing(
    shop: Workspace, panel: ContractPanel, text: str, message: str
) -> None:
    before = shop.get(APP, "get")
    panel.editor.value = text
    panel.save.click()
    assert message in panel.status.text and "nk-status-error" in panel.status._dom_classes
    assert shop.get(APP, "get") == before
    assert panel.editor.value == text  # the edit stays to be mended
    panel.revert.click()
    assert json.loads(panel.editor.value) == {}


def test_clear_asks_first_and_cancel_keeps_it(shop: Workspace, panel: ContractPanel) -> None:
    shop.edit(APP, "get", contract={"responses": {"200": {}}})
    panel.load(shop.get(APP, "get"))
    panel.clear.click()
    assert panel.ask.asking and "Clear the contract of shop/get?" in panel.ask.question.value
    panel.ask.cancel.click()
    assert not shop.contract(APP, "get").is_empty
    panel.clear.click()
    panel.ask.confirm.click()
    assert shop.contract(APP, "get").is_empty
    assert panel.status.text == "Contract cleared; live stages change at the next deploy"


def test_the_studio_shows_the_contract_of_the_definition_open(shop: Workspace) -> None:
    shop.edit(APP, "get", contract={"parameters": [{"name": "full", "in": "query"}]})
    studio = Studio(shop, poll_interval=None)
    try:
        assert TAB_TITLES.index("Contract") == TAB_TITLES.index("Test") + 1
        assert studio.tabs.children[TAB_TITLES.index("Contract")] is studio.contract
        studio.select(APP, "get")
        assert json.loads(studio.contract.editor.value)["parameters"][0]["name"] == "full"
        studio.form.new()
        studio._open(None)
        assert "Save the definition first" in studio.contract.summary.value
    finally:
        studio.close()

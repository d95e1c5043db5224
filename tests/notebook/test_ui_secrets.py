"""The studio's Secrets tab, driven from Python: set (a password field emptied at once),
list names only, delete after a confirm, the not-live warning, refusals as a status."""

from __future__ import annotations

from pathlib import Path

import ipywidgets as widgets
import pytest

from notebook_kit.notebook.ui.secrets import SecretsPanel
from notebook_kit.notebook.ui.studio import TAB_TITLES, Studio
from notebook_kit.workspace.secrets import KEY_ENV, KEY_FILE_ENV
from notebook_kit.workspace.workspace import Workspace

APP = "restapi_sample"
CANARY = "canary-studio-4c1e-value"


@pytest.fixture(autouse=True)
def key_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "config" / "secrets.key"
    monkeypatch.setenv(KEY_FILE_ENV, str(path))
    monkeypatch.delenv(KEY_ENV, raising=False)
    return path


@pytest.fixture
def panel(sample_workspace: Workspace) -> SecretsPanel:
    shown = SecretsPanel(sample_workspace, lambda: APP)
    shown.refresh()
    return shown


def state_text(root: widgets.Widget) -> str:
    """Every string in the widgets' synced state (what the page holds)."""
    found: list[str] = []
    stack = [root]
    while stack:
        widget = stack.pop()
        found += [str(v) for v in widget.get_state().values() if isinstance(v, (str, list))]
        stack.extend(getattr(widget, "children", ()))
    return "\n".join(found)


def _set(panel: SecretsPanel, name: str, value: str, stage: str = "dev") -> None:
    panel.name.value, panel.stage.value, panel.value.value = name, stage, value
    panel.set.click()


def test_set_lists_the_name_and_never_keeps_the_value(panel: SecretsPanel) -> None:
    ws = panel.workspace
    assert "has no secrets" in panel.table.value
    _set(panel, "TOKEN", CANARY)
    assert panel.status.text == "Secret TOKEN set on dev"
    assert panel.value.value == "" and panel.name.value == ""
    assert 'data-name="TOKEN"' in panel.table.value and "dev" in panel.table.value
    assert ws.secret_keeper.values(APP, "dev") == {"TOKEN": CANARY}
    # the sample is live on dev: what is live keeps its values until the next deploy
    assert "keeps serving the secrets it was deployed with" in panel.warning.value
    assert CANARY not in state_text(panel) + repr(panel)


def test_refusals_show_in_the_status_and_change_nothing(panel: SecretsPanel) -> None:
    _set(panel, "bad name", CANARY)
    assert "secret name 'bad name'" in panel.status.text
    _set(panel, "EMPTY", "")
    assert "is empty" in panel.status.text
    assert panel.workspace.secrets(APP) == []
    assert CANARY not in state_text(panel)


def test_delete_asks_first_and_cancel_keeps_it(panel: SecretsPanel) -> None:
    _set(panel, "TOKEN", CANARY, stage="prod")
    panel.picked.value = ("TOKEN", "prod")
    panel.delete.click()
    assert panel.ask.asking and "Delete secret TOKEN of restapi_sample on prod?" in (
        panel.ask.question.value
    )
    panel.ask.cancel.click()
    assert [s.name for s in panel.workspace.secrets(APP)] == ["TOKEN"]
    panel.delete.click()
    panel.ask.confirm.click()
    assert panel.workspace.secrets(APP) == []
    assert panel.status.text == "Secret TOKEN deleted on prod"
    assert "has no secrets" in panel.table.value


def test_the_studio_has_a_secrets_tab(sample_workspace: Workspace) -> None:
    studio = Studio(sample_workspace, poll_interval=None)
    try:
        index = TAB_TITLES.index("Secrets")
        assert studio.tabs.children[index] is studio.secrets
        studio.tabs.selected_index = index
        _set(studio.secrets, "TOKEN", CANARY)
        assert 'data-name="TOKEN"' in studio.secrets.table.value
        assert CANARY not in state_text(studio)
    finally:
        studio.close()

"""The studio's Consumers tab from Python over a real workspace: create a consumer (its key
shown once, then forgotten), add and revoke keys and delete a consumer (each asked first,
Cancel changing nothing), refusals on the line next to the control, the built-in stage
consumers read-only, and a consumer's usage and quota as counted in the store. In the
browser: ``tests/browser/test_browser_consumers.py``."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime, timedelta

import pytest

from notebook_kit.notebook.ui.charts import usage_svg
from notebook_kit.notebook.ui.consumers import ConsumersPanel
from notebook_kit.notebook.ui.studio import TAB_TITLES, Studio
from notebook_kit.workspace.workspace import Workspace

APP = "restapi_sample"
KEY = re.compile(r"nk_[A-Za-z0-9_-]{40}")


@pytest.fixture
def panel(sample_workspace: Workspace) -> ConsumersPanel:
    return ConsumersPanel(sample_workspace)


def _create(panel: ConsumersPanel, name: str, **fields: str) -> None:
    """Fill the form (the fields not given blank; a refused create keeps what was typed)
    and click Create."""
    panel.name.value = name
    for field in ("rate", "burst", "quota", "expires"):
        getattr(panel, field).value = fields.pop(field, "")
    for field, value in fields.items():
        getattr(panel, field).value = value
    panel.create.click()


def _state_text(panel: ConsumersPanel) -> str:
    """Every string in the panel's widgets' synced state (what the page holds)."""
    found: list[str] = []
    stack = [panel]
    while stack:
        widget = stack.pop()
        found += [v for v in widget.get_state().values() if isinstance(v, str)]
        stack.extend(getattr(widget, "children", ()))
    return "\n".join(found)


def test_create_shows_the_key_once_and_forgets_it(panel: ConsumersPanel) -> None:
    ws = panel.workspace
    panel.apps.value = (APP,)
    panel.stages["prod"].value = False
    _create(panel, "student-1", rate="5/s", burst="2", quota="100/day", expires="30d")
    assert panel.create_status.text.startswith("Created consumer student-1 with key nk_")
    (made,) = [c for c in ws.consumers.list() if c.name == "student-1"]
    assert (made.apps, made.stages, made.rate.text(), made.rate.burst) == (  # type: ignore[union-attr]
        (APP,),
        ("dev",),
        "5/s",
        2,
    )
    assert made.quota is not None and made.quota.text() == "100/day"
    assert made.keys[0].expires_at is not None
    key = KEY.findall(panel.created_key.key.value)
    assert len(key) == 1 and key[0].startswith(made.keys[0].prefix)
    assert panel.created_key.copy.text == key[0]  # the copy button copies it
    assert "will not be shown again" in panel.created_key.note.value
    assert panel.created_key.layout.display is None
    # the form is emptied, the new consumer picked; the table lists its key by prefix only
    assert (panel.name.value, panel.rate.value, panel.apps.value) == ("", "", ())
    assert panel.consumer.value == "student-1"
    assert made.keys[0].prefix in panel.table.value and key[0] not in panel.table.value
    assert "5/s (2)" in panel.table.value and "100/day" in panel.table.value
    # the studio's background redraw keeps it (long enough to copy) ...
    panel.refresh()
    assert panel.created_key.shown and key[0] in _state_text(panel)
    # ... the next click forgets it, everywhere in the widgets' state
    panel.refresh_button.click()
    assert not panel.created_key.shown and panel.created_key.layout.display == "none"
    assert key[0] not in _state_text(panel)
    assert panel.status.text == "3 consumers"


def test_hide_and_any_other_action_forget_the_key(panel: ConsumersPanel) -> None:
    _create(panel, "a")
    key = panel.created_key.copy.text
    panel.created_key.hide.click()
    assert key not in _state_text(panel)
    panel.add_key.click()
    added = panel.added_key.copy.text
    assert KEY.fullmatch(added) and panel.manage_status.text.startswith("Added key nk_")
    _create(panel, "b")  # another action: the first key shown is gone
    assert added not in _state_text(panel) and panel.created_key.shown


def test_refusals_show_next_to_their_control_and_change_nothing(panel: ConsumersPanel) -> None:
    ws = panel.workspace
    before = [c.to_dict() for c in ws.consumers.list()]
    cases = [
        ({"rate": "fast"}, "rate 'fast' is not valid: write N/s or N/min (e.g. 100/s)"),
        ({"quota": "9/year"}, "quota '9/year' is not valid"),
        ({"burst": "x", "rate": "5/s"}, "burst 'x' is not valid: a whole number"),
        ({"expires": "2001-01-01"}, "expiry '2001-01-01' is in the past"),
    ]
    for fields, message in cases:
        _create(panel, "c1", **fields)
        assert panel.create_status.text.startswith(message), panel.create_status.text
        assert "nk-status-error" in panel.create_status._dom_classes
        assert not panel.create.disabled  # enabled again after the refusal
    _create(panel, "bad name!")
    assert panel.create_status.text.startswith("consumer name 'bad name!' is not valid")
    for box in panel.stages.values():
        box.value = False
    _create(panel, "c1")
    assert panel.create_status.text == "tick at least one stage the consumer may call"
    assert [c.to_dict() for c in ws.consumers.list()] == before
    assert not panel.created_key.shown
    # a third key is refused on the line of the key row
    for box in panel.stages.values():
        box.value = True
    _create(panel, "c1")
    panel.add_key.click()
    panel.add_key.click()
    assert panel.manage_status.text.startswith("consumer 'c1' already has 2 keys")
    panel.key_expires.value = "soon"
    panel.add_key.click()
    assert panel.manage_status.text.startswith("expiry 'soon' is not valid")
    assert len(next(c for c in ws.consumers.list() if c.name == "c1").keys) == 2


def test_revoke_and_delete_ask_and_cancel_changes_nothing(panel: ConsumersPanel) -> None:
    ws = panel.workspace
    _create(panel, "rotating")
    panel.add_key.click()
    keys = [k.prefix for k in ws.consumers.get("rotating").keys]
    assert list(panel.key.options) == keys
    panel.key.value = keys[0]
    panel.revoke.click()
    assert panel.ask.asking
    assert f"Revoke rotating&#x27;s key {keys[0]}…?" in panel.ask.question.value
    assert not panel.added_key.shown  # asking is an action too
    panel.ask.cancel.click()
    assert panel.manage_status.text == "Cancelled: nothing changed"
    assert [k.prefix for k in ws.consumers.get("rotating").keys] == keys
    panel.revoke.click()
    panel.ask.confirm.click()
    assert [k.prefix for k in ws.consumers.get("rotating").keys] == keys[1:]
    assert panel.manage_status.text.startswith(f"Revoked rotating's key {keys[0]}…")
    assert list(panel.key.options) == keys[1:]
    assert f'data-prefix="{keys[0]}"' not in panel.table.value

    panel.delete.click()
    assert panel.ask.confirm.description == "Confirm delete"
    panel.ask.cancel.click()
    assert "rotating" in [c.name for c in ws.consumers.list()]
    panel.delete.click()
    panel.ask.confirm.click()
    assert "rotating" not in [c.name for c in ws.consumers.list()]
    assert panel.manage_status.text.startswith("Deleted consumer rotating")
    assert 'data-consumer="rotating"' not in panel.table.value
    # a consumer deleted elsewhere while the question is open: the refusal is shown
    _create(panel, "gone")
    panel.delete.click()
    ws.consumers.delete("gone")
    panel.ask.confirm.click()
    assert panel.manage_status.text == "no consumer 'gone'"


def test_builtin_stage_consumers_are_listed_read_only(panel: ConsumersPanel) -> None:
    ws = panel.workspace
    rows = re.findall(r'<tr class="([^"]+)" data-consumer="([^"]+)"', panel.table.value)
    assert rows == [
        ("nk-consumer-row nk-consumer-builtin", "stage:dev"),
        ("nk-consumer-row nk-consumer-builtin", "stage:prod"),
    ]
    assert ws.keys()["dev"] not in panel.table.value  # the prefix only
    panel.consumer.value = "stage:prod"
    assert panel.revoke.disabled and panel.add_key.disabled and panel.delete.disabled
    assert "Server tab" in panel.note.value


def test_usage_chart_and_quota_of_the_consumer_picked(panel: ConsumersPanel) -> None:
    ws = panel.workspace
    _create(panel, "metered", quota="100/day")
    today = datetime.now(UTC).date()
    yesterday = (today - timedelta(days=1)).isoformat()
    with ws.store.transaction():
        ws.store.consumers.add_usage(
            [
                ("metered", APP, "dev", yesterday, 7, 1, 0),
                ("metered", APP, "prod", today.isoformat(), 12, 2, 1),
            ]
        )
        granted = ws.store.consumers.take("metered", 19, time.time())["units"]
    panel.refresh()
    usage = panel.usage.value
    assert f"<b>{granted}</b> used, <b>{100 - granted}</b> left this day" in usage
    assert "nk-chart-usage" in usage and "Calls per day" in usage
    assert f"{today.isoformat()}: 9 answered 2xx/3xx" in usage
    assert f"{today.isoformat()}: 1 answered 5xx" in usage
    assert f"{yesterday}: 1 answered 4xx" in usage
    assert f"{granted} / {100 - granted}" in panel.table.value  # used / left
    _create(panel, "idle")
    assert "No calls from idle in the last 30 days." in panel.usage.value
    assert "idle has no quota." in panel.usage.value


def test_usage_svg_fills_the_days_without_calls() -> None:
    svg = usage_svg(
        [{"day": "2026-11-20", "calls": 4, "4xx": 0, "5xx": 0}], today="2026-11-27", span=10
    )
    assert svg.count("<rect class=") == 1 and "2026-11-20: 4 answered 2xx/3xx" in svg
    assert ">11-18</text>" in svg  # the window's first day
    assert usage_svg([], today="2026-11-27") == ""
    old = [{"day": "2026-01-01", "calls": 4, "4xx": 0, "5xx": 0}]
    assert usage_svg(old, today="2026-11-27") == ""  # outside the window


def test_the_studio_has_the_tab_and_forgets_a_key_when_it_is_left(
    sample_workspace: Workspace,
) -> None:
    studio = Studio(sample_workspace, poll_interval=None)
    try:
        tab = TAB_TITLES.index("Consumers")
        assert studio.tabs.titles[tab] == "Consumers" and studio.tabs.children[tab] is (
            studio.consumers
        )
        studio.tabs.selected_index = tab
        _create(studio.consumers, "tabbed")
        assert studio.consumers.created_key.shown
        studio.refresh()  # the background redraw keeps it
        assert studio.consumers.created_key.shown
        studio.tabs.selected_index = TAB_TITLES.index("Logs")
        assert not studio.consumers.created_key.shown
    finally:
        studio.close()

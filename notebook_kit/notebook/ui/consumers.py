"""``ConsumersPanel``: the studio's Consumers tab (docs/studio-logs.md).

Every consumer in one table (its applications, stages, rate, quota used and left, its keys
by prefix with their expiry and last use; the two built-in stage consumers read-only), a
form to create one, and for the consumer picked: add a key, revoke a key, delete it (both
asked first, with Cancel), its calls per day and its quota. Every rule and figure comes
from the core (``Workspace.consumers``); this only draws and asks.

A key is shown once, when it is made, with a copy button and a line saying it will not be
shown again. The panel forgets it (the text leaves the widgets' state, in the kernel and
in the page) at the next click of any of its buttons, when Hide key is clicked, or when
the studio leaves the tab. The studio's background redraw (another process changed the
store: a server counting calls does, every second) keeps it, so it stays long enough to
copy.
"""

from __future__ import annotations

import html
from datetime import UTC, datetime
from typing import Any

import ipywidgets as widgets

from ...domain.consumers import Consumer
from ...domain.models import Stage
from ...errors import ValidationError
from ...workspace.workspace import Workspace
from .charts import usage_svg
from .copy import CopyButton
from .feedback import Confirm, Status
from .history import wrapping

__all__ = ["ConsumersPanel", "NewKeyBox", "consumers_html"]

_CELL = "padding:2px 10px;text-align:left;vertical-align:top;border-bottom:1px solid #d0d7de"
_HEAD = ("consumer", "applications", "stages", "rate (burst)", "quota", "used / left", "keys")
_NEVER = "never"


def _when(text: str | None) -> str:
    """An ISO time as a table shows it: to the second, UTC."""
    if not text:
        return _NEVER
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return text
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _is_past(text: str | None) -> bool:
    if not text:
        return False
    return datetime.fromisoformat(text.replace("Z", "+00:00")) <= datetime.now(UTC)


def _keys_html(keys: list[dict[str, Any]], builtin: bool) -> str:
    lines = []
    for key in keys:
        if builtin:
            note = "the stage's own key (Server tab)"
        else:
            expires = key["expires_at"]
            ends = (
                f"expired {_when(expires)}"
                if _is_past(expires)
                else f"expires {_when(expires)}"
                if expires
                else "never expires"
            )
            used = key["last_used_at"]
            note = f"{ends}; {'last used ' + _when(used) if used else 'never used'}"
        prefix = html.escape(key["prefix"])
        lines.append(
            f'<div class="nk-consumer-key" data-prefix="{prefix}"><code>{prefix}…</code> '
            f'<span style="color:#555">{html.escape(note)}</span></div>'
        )
    return "".join(lines) or '<span style="color:#555">no key</span>'


def consumers_html(consumers: list[dict[str, Any]], quotas: dict[str, tuple[int, int]]) -> str:
    """The consumers table: ``consumers`` as ``Consumer.to_dict()``, ``quotas`` the
    (used, left) of each consumer with a quota (``Consumers.quotas()``)."""
    head = "".join(f'<th style="{_CELL}">{h}</th>' for h in _HEAD)
    rows = []
    for c in consumers:
        name, builtin = c["name"], c["builtin"]
        rate = "-" if c["rate"] is None else f"{c['rate']} ({c['burst']})"
        if c["quota"] is None:
            used = "-"
        else:
            taken, left = quotas[name]
            used = f"{taken} / {left}"
        cells = (
            html.escape(name) + (" <i>(built-in)</i>" if builtin else ""),
            html.escape(", ".join(c["apps"]) or "all"),
            html.escape(", ".join(c["stages"]) or "dev, prod"),
            html.escape("no limit" if builtin else rate),
            html.escape(c["quota"] or "-"),
            html.escape(used),
            _keys_html(c["keys"], builtin),
        )
        tds = "".join(f'<td style="{_CELL}">{cell}</td>' for cell in cells)
        css = "nk-consumer-row nk-consumer-builtin" if builtin else "nk-consumer-row"
        rows.append(f'<tr class="{css}" data-consumer="{html.escape(name)}">{tds}</tr>')
    return (
        '<table class="nk-consumers-table" style="border-collapse:collapse">'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


class NewKeyBox(widgets.VBox):
    """A key just made, shown once: the key, a copy button, a line saying it will not be
    shown again, and Hide key. ``forget()`` clears the key from every widget's state."""

    def __init__(self, css: str) -> None:
        self.key = widgets.HTML()
        self.key.add_class("nk-new-key-value")
        self.copy = CopyButton(label="Copy key")
        self.hide = widgets.Button(
            description="Hide key", icon="eye-slash", layout=widgets.Layout(width="auto")
        )
        self.hide.add_class("nk-new-key-hide")
        self.hide.on_click(self._on_hide_click)
        self.note = widgets.HTML(
            "<b>Copy this key now: it will not be shown again.</b> Only its first "
            "characters are kept, to list and revoke it."
        )
        super().__init__([self.key, wrapping(self.copy, self.hide), self.note])
        self.add_class("nk-new-key")
        self.add_class(css)
        self.layout.display = "none"

    @property
    def shown(self) -> bool:
        return bool(self.copy.text)

    def show(self, name: str, key: str, expires_at: str | None) -> None:
        ends = f"expires {_when(expires_at)}" if expires_at else "never expires"
        self.key.value = (
            f"New key of <b>{html.escape(name)}</b> ({ends}):<br>"
            f'<code class="nk-new-key-text" style="user-select:all;font-size:13px">'
            f"{html.escape(key)}</code>"
        )
        self.copy.text = key
        self.layout.display = None

    def forget(self) -> None:
        self.key.value = ""
        self.copy.text = ""
        self.layout.display = "none"

    def _on_hide_click(self, _button: widgets.Button) -> None:
        self.forget()


def _text(widget: widgets.Text) -> str | None:
    return widget.value.strip() or None


class ConsumersPanel(widgets.VBox):
    """The Consumers tab; ``refresh()`` re-reads the store (keeping a key just shown)."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        auto = widgets.Layout(width="auto")
        field = {"style": {"description_width": "initial"}}
        # the table
        self.refresh_button = widgets.Button(description="Refresh", icon="refresh", layout=auto)
        self.status = Status("nk-consumers-status")
        self.table = widgets.HTML()
        # the consumer picked: its keys, delete, usage
        self.consumer = widgets.Dropdown(description="Consumer", layout=auto, **field)
        self.key = widgets.Dropdown(description="Key", layout=auto, **field)
        self.revoke = widgets.Button(description="Revoke key", icon="ban", layout=auto)
        self.key_expires = widgets.Text(
            description="New key expires",
            placeholder="90d, 2027-01-31 (blank: never)",
            layout=widgets.Layout(width="27em"),
            **field,
        )
        self.add_key = widgets.Button(description="Add key", icon="key", layout=auto)
        self.delete = widgets.Button(description="Delete consumer", icon="trash", layout=auto)
        self.manage_status = Status("nk-consumer-manage-status")
        self.ask = Confirm(self.manage_status, "Confirm", "nk-consumers-ask")
        self.added_key = NewKeyBox("nk-added-key")
        self.note = widgets.HTML()
        self.usage = widgets.HTML()
        # the create form
        self.name = widgets.Text(description="Name", placeholder="student-1", **field)
        self.apps = widgets.SelectMultiple(
            description="Applications (none: all)", rows=4, layout=auto, **field
        )
        self.stages = {
            s: widgets.Checkbox(value=True, description=str(s), indent=False) for s in Stage
        }
        self.rate = widgets.Text(description="Rate", placeholder="10/s or 600/min", **field)
        self.burst = widgets.Text(description="Burst", placeholder="(the rate)", **field)
        self.quota = widgets.Text(
            description="Quota", placeholder="1000/day, /week, /month", **field
        )
        self.expires = widgets.Text(
            description="Key expires",
            placeholder="90d, 2027-01-31 (blank: never)",
            layout=widgets.Layout(width="24em"),
            **field,
        )
        self.create = widgets.Button(
            description="Create consumer", icon="plus", button_style="primary", layout=auto
        )
        self.create_status = Status("nk-consumer-create-status")
        self.created_key = NewKeyBox("nk-created-key")
        for widget, css in (
            (self.refresh_button, "nk-consumers-refresh"),
            (self.table, "nk-consumers"),
            (self.consumer, "nk-consumer-pick"),
            (self.key, "nk-consumer-key-pick"),
            (self.revoke, "nk-consumer-revoke"),
            (self.key_expires, "nk-consumer-key-expires"),
            (self.add_key, "nk-consumer-add-key"),
            (self.delete, "nk-consumer-delete"),
            (self.note, "nk-consumer-note"),
            (self.usage, "nk-consumer-usage"),
            (self.name, "nk-consumer-name"),
            (self.apps, "nk-consumer-apps"),
            (self.rate, "nk-consumer-rate"),
            (self.burst, "nk-consumer-burst"),
            (self.quota, "nk-consumer-quota"),
            (self.expires, "nk-consumer-expires"),
            (self.create, "nk-consumer-create"),
        ):
            widget.add_class(css)
        for stage, box in self.stages.items():
            box.add_class(f"nk-consumer-stage-{stage}")
        self.refresh_button.on_click(self._on_refresh_button_click)
        self.consumer.observe(self._on_consumer_value, names="value")
        self.revoke.on_click(self._on_revoke_click)
        self.add_key.on_click(self._on_add_key_click)
        self.delete.on_click(self._on_delete_click)
        self.create.on_click(self._on_create_click)
        super().__init__(
            [
                wrapping(widgets.HTML("<b>Consumers</b>"), self.refresh_button, self.status),
                self.table,
                widgets.HTML("<h4>Keys and usage</h4>"),
                wrapping(self.consumer, self.key, self.revoke, self.delete),
                wrapping(self.key_expires, self.add_key),
                self.ask,
                self.manage_status,
                self.added_key,
                self.note,
                self.usage,
                widgets.HTML("<h4>New consumer</h4>"),
                wrapping(self.name, self.apps),
                wrapping(widgets.HTML("Stages"), *self.stages.values()),
                wrapping(self.rate, self.burst, self.quota, self.expires),
                wrapping(self.create, self.create_status),
                self.created_key,
            ]
        )
        self.add_class("nk-consumers-panel")
        self.refresh()

    @property
    def buttons(self) -> tuple[widgets.Button, ...]:
        return (self.refresh_button, self.revoke, self.add_key, self.delete, self.create)

    def forget_key(self) -> None:
        """Clear a key shown (the studio calls this when its tab is left)."""
        self.added_key.forget()
        self.created_key.forget()

    # -- drawing ----------------------------------------------------------------------------

    def refresh(self) -> None:
        """Re-read the consumers, their usage and the applications (a key shown stays)."""
        consumers = self.workspace.consumers.list()
        quotas = self.workspace.consumers.quotas()
        self._quotas = quotas
        self._consumers = {c.name: c for c in consumers}
        self.table.value = consumers_html([c.to_dict() for c in consumers], quotas)
        chosen = set(self.apps.value)
        apps = [a.id for a in self.workspace.applications()]
        self.apps.options = apps
        self.apps.value = tuple(a for a in apps if a in chosen)
        names = [c.name for c in consumers]
        picked = self.consumer.value
        if picked not in names:
            picked = next((c.name for c in consumers if not c.builtin), names[0])
        if tuple(self.consumer.options) != tuple(names):
            self.consumer.options = names
        if self.consumer.value != picked:
            self.consumer.value = picked  # draws it (_on_consumer_value)
        else:
            self._show_consumer()

    def _picked(self) -> Consumer | None:
        return self._consumers.get(self.consumer.value or "")

    def _show_consumer(self) -> None:
        """The keys, note and usage of the consumer picked."""
        consumer = self._picked()
        if consumer is None:
            self.key.options, self.usage.value, self.note.value = [], "", ""
            return
        prefixes = [k.prefix for k in consumer.keys]
        keep = self.key.value if self.key.value in prefixes else None
        self.key.options = prefixes
        self.key.value = keep or (prefixes[0] if prefixes else None)
        for button in (self.revoke, self.add_key, self.delete):
            button.disabled = consumer.builtin
        self.revoke.disabled = consumer.builtin or not prefixes
        stage = consumer.name.partition(":")[2]
        self.note.value = (
            f"<i>{html.escape(consumer.name)} is the {html.escape(stage)} stage's own key: "
            "see or rotate it in the Server tab.</i>"
            if consumer.builtin
            else ""
        )
        self.usage.value = self._usage_html(consumer)

    def _usage_html(self, consumer: Consumer) -> str:
        name = html.escape(consumer.name)
        if consumer.quota is None:
            quota = f"<div class='nk-consumer-quota-left'>{name} has no quota.</div>"
        else:
            used, left = self._quotas[consumer.name]
            reset = self.workspace.consumers.quota_reset(consumer.name)
            share = min(1.0, used / consumer.quota.count)
            colour = "#b34700" if share >= 0.9 else "#0072B2"
            quota = (
                f"<div class='nk-consumer-quota-left'>Quota {consumer.quota.text()}: "
                f"<b>{used}</b> used, <b>{left}</b> left this {consumer.quota.period} "
                f"(resets {_when(reset)})"
                '<div style="background:#e8eaed;border-radius:3px;height:8px;width:180px">'
                f'<div style="background:{colour};border-radius:3px;height:8px;'
                f'width:{share * 100:.0f}%"></div></div></div>'
            )
        svg = usage_svg(self.workspace.consumers.daily(consumer.name))
        chart = svg or (
            f'<p class="nk-consumer-no-calls">No calls from {name} in the last 30 days.</p>'
        )
        return f"{quota}<div>{chart}</div>"

    # -- callbacks ----------------------------------------------------------------------------

    def _on_consumer_value(self, change: dict[str, object]) -> None:
        with self.manage_status.working():
            self.ask.close_question()
            self._show_consumer()

    def _on_refresh_button_click(self, _button: widgets.Button) -> None:
        with self.status.working(*self.buttons):
            self.forget_key()
            self.refresh()
            self.status.ok(f"{len(self._consumers)} consumers")

    def _user_consumer(self) -> str:
        consumer = self._picked()
        if consumer is None:
            raise ValidationError("pick a consumer first")
        if consumer.builtin:
            raise ValidationError(
                f"{consumer.name} is a stage's own key: rotate it in the Server tab"
            )
        return consumer.name

    def _revoke(self, name: str, prefix: str) -> None:
        self.workspace.consumers.revoke_key(name, prefix)
        self.refresh()
        self.manage_status.ok(f"Revoked {name}'s key {prefix}…: callers using it get 403")

    def _on_revoke_click(self, _button: widgets.Button) -> None:
        with self.manage_status.working(*self.buttons):
            self.forget_key()
            name, prefix = self._user_consumer(), self.key.value
            if not prefix:
                raise ValidationError(f"{name} has no key to revoke")
            self.ask.ask(
                f"Revoke {name}'s key {prefix}…? Calls with it are refused within a second.",
                lambda: self._revoke(name, prefix),
                confirm_label="Confirm revoke",
            )

    def _on_add_key_click(self, _button: widgets.Button) -> None:
        with self.manage_status.working(*self.buttons):
            self.forget_key()
            self.ask.close_question()
            made = self.workspace.consumers.add_key(self._user_consumer(), _text(self.key_expires))
            self.key_expires.value = ""
            self.refresh()
            self.added_key.show(made["name"], made["key"], made["expires_at"])
            self.manage_status.ok(f"Added key {made['prefix']}… to {made['name']}")

    def _delete(self, name: str) -> None:
        self.workspace.consumers.delete(name)
        self.refresh()
        self.manage_status.ok(f"Deleted consumer {name}: its keys are refused from now on")

    def _on_delete_click(self, _button: widgets.Button) -> None:
        with self.manage_status.working(*self.buttons):
            self.forget_key()
            name = self._user_consumer()
            self.ask.ask(
                f"Delete consumer {name} and its keys? Its callers get 403 within a second.",
                lambda: self._delete(name),
                confirm_label="Confirm delete",
            )

    def _on_create_click(self, _button: widgets.Button) -> None:
        with self.create_status.working(*self.buttons):
            self.forget_key()
            self.ask.close_question()
            stages = [str(s) for s, box in self.stages.items() if box.value]
            if not stages:
                raise ValidationError("tick at least one stage the consumer may call")
            made = self.workspace.consumers.create(
                self.name.value.strip(),
                apps=list(self.apps.value) or None,
                stages=None if len(stages) == len(Stage) else stages,
                rate=_text(self.rate),
                burst=self.burst.value,
                quota=_text(self.quota),
                expires=_text(self.expires),
            )
            for widget in (self.name, self.rate, self.burst, self.quota, self.expires):
                widget.value = ""
            self.apps.value = ()
            self.refresh()
            self.consumer.value = made["name"]
            self.created_key.show(made["name"], made["key"], made["expires_at"])
            self.create_status.ok(f"Created consumer {made['name']} with key {made['prefix']}…")

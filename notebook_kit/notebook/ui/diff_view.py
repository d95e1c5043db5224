"""HTML for the Deploy tab: the deployments table of each stage and the saved-vs-live diff.

Only drawing: which deployment is live and what differs come from the core
(``Workspace.deployments`` and ``Workspace.diff``).
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from datetime import datetime

from ...domain.models import Deployment, Stage
from ...workspace.diffing import DefinitionChange, StageDiff

__all__ = ["deployments_html", "diff_html", "local_time"]

_CELL = "padding:2px 6px;text-align:left;border-bottom:1px solid #d0d7de"
_KIND_COLOURS = {"added": "#1a7f37", "removed": "#cf222e", "changed": "#9a6700"}
_LINE_COLOURS = {"+": "#1a7f37", "-": "#cf222e", "@": "#6e7781"}
STAGE_NAMES = {Stage.DEV: "debug", Stage.PROD: "release"}


def local_time(stamp: str) -> str:
    """A stored UTC time (``2026-11-25T08:14:03.120Z``) as this machine's local time,
    to the second (``2026-11-25 09:14:03``)."""
    try:
        when = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return stamp
    return when.astimezone().strftime("%Y-%m-%d %H:%M:%S")


def deployments_html(deployments: Iterable[Deployment]) -> str:
    """One table per stage, newest first: ID, local time (UTC on hover) and host,
    description; the live one marked, every other one with a Rollback button."""
    by_stage = {stage: [d for d in deployments if d.stage == stage] for stage in Stage}
    parts = []
    for stage, rows in by_stage.items():
        parts.append(f"<b>{stage}</b> ({STAGE_NAMES[stage]})")
        if not rows:
            parts.append(f'<div class="nk-deployments-{stage}"><i>never deployed</i></div>')
            continue
        head = "".join(
            f'<th style="{_CELL}">{h}</th>' for h in ("ID", "Deployed at, from", "Description", "")
        )
        body = []
        for d in sorted(rows, key=lambda d: d.id, reverse=True):
            if d.active:
                last = '<span class="nk-live" style="color:#1a7f37;font-weight:bold">● live</span>'
            else:
                last = (
                    '<button class="nk-row-rollback jupyter-button widget-button" '
                    f'data-nk-event="rollback" data-nk-id="{d.id}" title="Serve deployment '
                    f'{d.id} on {stage} again (asks first)">Rollback</button>'
                )
            when = html.escape(local_time(d.deployed_at))
            body.append(
                f'<tr data-deployment-id="{d.id}" data-stage="{stage}">'
                f'<td style="{_CELL}">{d.id}</td>'
                f'<td style="{_CELL}" title="{html.escape(d.deployed_at)} (UTC)">{when}'
                f'<br><small class="nk-deployment-host" style="color:#57606a">'
                f"{html.escape(d.host)}</small></td>"
                f'<td class="nk-deployment-description" style="{_CELL}">'
                f"{html.escape(d.description)}</td>"
                f'<td style="{_CELL}">{last}</td></tr>'
            )
        parts.append(
            f'<table class="nk-deployments-{stage}" style="border-collapse:collapse">'
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
        )
    return "".join(f"<div>{p}</div>" for p in parts)


def _unified_html(text: str) -> str:
    lines = []
    for line in text.splitlines():
        colour = _LINE_COLOURS.get(line[:1], "inherit")
        if line.startswith(("+++", "---")):
            colour = "#6e7781"
        lines.append(f'<span style="color:{colour}">{html.escape(line)}</span>')
    return (
        '<pre class="nk-diff-unified" style="margin:2px 0 6px 0;padding:4px;'
        f'background:#f6f8fa;overflow-x:auto">{chr(10).join(lines)}</pre>'
    )


def _change_html(change: DefinitionChange) -> str:
    colour = _KIND_COLOURS[change.kind]
    name = html.escape(change.id)
    if change.live_id and change.live_id != change.id and change.kind == "changed":
        name = f"{html.escape(change.live_id)} → {name}"
    head = (
        f'<span class="nk-diff-{change.kind}" style="color:{colour};font-weight:bold">'
        f"{change.kind}</span> {name} <code>{change.method} /{html.escape(change.resource)}</code>"
    )
    if not change.fields:
        return f'<li data-api-id="{html.escape(change.id)}">{head}</li>'
    details = []
    for f in change.fields:
        if f.unified:
            details.append(f"<div><b>{f.name}</b></div>{_unified_html(f.unified)}")
        else:
            details.append(
                f'<div><b>{f.name}</b>: <del style="color:#cf222e">{html.escape(f.live)}</del>'
                f' → <ins style="color:#1a7f37">{html.escape(f.saved)}</ins></div>'
            )
    names = ", ".join(f.name for f in change.fields)
    return (
        f'<li data-api-id="{html.escape(change.id)}">{head} ({names})'
        f"<div style='margin-left:1em'>{''.join(details)}</div></li>"
    )


def diff_html(diffs: Iterable[StageDiff]) -> str:
    """Per stage: in sync, or the list of added / removed / changed definitions with what
    changed (a unified diff for the action and the user functions)."""
    parts = []
    for diff in diffs:
        stage = diff.stage
        title = f"<b>{stage}</b> ({STAGE_NAMES[stage]})"
        if diff.deployment_id is None:
            summary = "not deployed: a deploy adds every saved definition"
        elif diff.in_sync:
            summary = f"deployment {diff.deployment_id} is live, the same as saved"
        else:
            counts = {k: sum(c.kind == k for c in diff.changes) for k in _KIND_COLOURS}
            said = ", ".join(f"{n} {k}" for k, n in counts.items() if n)
            summary = f"deployment {diff.deployment_id} is live; saved differs: {said}"
        items = "".join(_change_html(c) for c in diff.changes)
        listing = f"<ul style='margin:2px 0'>{items}</ul>" if items else ""
        parts.append(
            f'<div class="nk-diff-{stage}" data-in-sync="{str(diff.in_sync).lower()}">'
            f"{title}: {html.escape(summary)}{listing}</div>"
        )
    return "".join(parts)

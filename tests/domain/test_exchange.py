"""Export and import: the versioned document, the round trip, and every refusal."""

from __future__ import annotations

import copy
import json
import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from notebook_kit.domain.exchange import FORMAT, from_document
from notebook_kit.domain.models import Constant
from notebook_kit.errors import ConflictError, FormatError, ValidationError
from notebook_kit.workspace.workspace import Workspace


def dump(ws: Workspace) -> list[str]:
    with closing(sqlite3.connect(ws.home / "workspace.sqlite3")) as conn:
        return list(conn.iterdump())


def _content(ws: Workspace, app: str) -> list[dict[str, Any]]:
    ignore = {"created_at", "updated_at"}
    return [{k: v for k, v in d.to_dict().items() if k not in ignore} for d in ws.definitions(app)]


@pytest.fixture
def exported(sample_workspace: Workspace, tmp_path: Path) -> Path:
    sample_workspace.create(
        "restapi_sample",
        "extra",
        label="Extra",
        method="PUT",
        resource="extra/{key}",
        action="res.body = fmt(const.N)\n",
        functions="def fmt(n):\n    return str(n)\n",
        content_type="text/plain",
        requires_auth=False,
        constants=[Constant("N", "Decimal", "1.50"), Constant("J", "JSON", {"a": [1]})],
    )
    return sample_workspace.export_file("restapi_sample", tmp_path / "sample.json")


def test_export_document_is_self_describing(exported: Path) -> None:
    document = json.loads(exported.read_text())
    assert document["format"] == "notebook-kit/1" == FORMAT
    assert document["application"] == {
        "id": "restapi_sample",
        "type": "REST API",
        "label": "REST API sample",
    }
    extra = next(d for d in document["definitions"] if d["id"] == "extra")
    assert extra == {
        "id": "extra",
        "label": "Extra",
        "method": "PUT",
        "resource": "extra/{key}",
        "content_type": "text/plain",
        "requires_auth": False,
        "action": "res.body = fmt(const.N)\n",
        "functions": "def fmt(n):\n    return str(n)\n",
        "constants": [
            {"name": "N", "type": "Decimal", "value": "1.50"},
            {"name": "J", "type": "JSON", "value": {"a": [1]}},
        ],
    }
    assert len(document["definitions"]) == 5
    assert not list(exported.parent.glob("*.partial"))


def test_import_round_trip_into_fresh_workspace(
    sample_workspace: Workspace, exported: Path, tmp_path: Path
) -> None:
    fresh = Workspace(tmp_path / "fresh")
    app = fresh.import_application(exported)
    assert app == sample_workspace.application("restapi_sample")
    assert _content(fresh, "restapi_sample") == _content(sample_workspace, "restapi_sample")
    fresh.deploy("restapi_sample", "dev")
    assert fresh.resources()["dev"]["apps"] == {"restapi_sample": 6}


def test_import_replace_overwrites_definitions(sample_workspace: Workspace, exported: Path) -> None:
    ws = sample_workspace
    ws.delete("restapi_sample", "extra")
    ws.create("restapi_sample", "stray", label="Stray", method="GET", resource="stray")
    ws.edit("restapi_sample", "calculator", label="changed")
    expected = json.loads(exported.read_text())["definitions"]
    ws.import_application(exported, replace=True)
    assert sorted(d.id for d in ws.definitions("restapi_sample")) == sorted(
        d["id"] for d in expected
    )
    assert ws.get("restapi_sample", "calculator").label != "changed"
    # importing never deploys: what is live stays as it was
    assert "extra" not in {d.id for d in ws.live("dev")["restapi_sample"]}


def test_import_existing_application_refused_without_replace(
    sample_workspace: Workspace, exported: Path
) -> None:
    before = dump(sample_workspace)
    with pytest.raises(
        ConflictError,
        match=r"'restapi_sample' already exists; .*import with replace=True \(CLI: --replace\)",
    ):
        sample_workspace.import_application(exported)
    assert dump(sample_workspace) == before


def test_import_truncated_file_refused(
    exported: Path, tmp_path: Path, workspace: Workspace
) -> None:
    text = exported.read_text()
    cut = tmp_path / "cut.json"
    cut.write_text(text[: len(text) // 2])
    before = dump(workspace)
    with pytest.raises(FormatError, match=r"invalid JSON at line .* is the file truncated"):
        workspace.import_application(cut)
    assert dump(workspace) == before


Change = Callable[[dict[str, Any]], Any]


def _set(path: tuple[Any, ...], value: Any) -> Change:
    def change(document: dict[str, Any]) -> None:
        target = document
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return change


def _drop(path: tuple[Any, ...]) -> Change:
    def change(document: dict[str, Any]) -> None:
        target = document
        for key in path[:-1]:
            target = target[key]
        del target[path[-1]]

    return change


def _duplicate_first(document: dict[str, Any]) -> None:
    document["definitions"].append(copy.deepcopy(document["definitions"][0]))


IMPORT_REFUSALS: list[tuple[str, Change, type[Exception], str]] = [
    (
        "other application type",
        _set(("application", "type"), "Workflow"),
        FormatError,
        "only applications of type 'REST API' can be imported; this file holds type 'Workflow'",
    ),
    (
        "unknown format version",
        _set(("format",), "notebook-kit/2"),
        FormatError,
        "unsupported export format 'notebook-kit/2'",
    ),
    ("no format", _drop(("format",)), FormatError, "the 'format' field is missing"),
    ("no application", _drop(("application",)), FormatError, "no 'application' with an 'id'"),
    ("no application id", _drop(("application", "id")), FormatError, "with an 'id'"),
    ("no definitions", _drop(("definitions",)), FormatError, "no 'definitions' list"),
    (
        "definitions not a list",
        _set(("definitions",), {"a": 1}),
        FormatError,
        "no 'definitions' list",
    ),
    (
        "definition not an object",
        _set(("definitions", 1), "GET x"),
        FormatError,
        "definition 2 is not an object",
    ),
    (
        "definition without label",
        _drop(("definitions", 0, "label")),
        FormatError,
        "definition 1 lacks label",
    ),
    (
        "invalid resource inside",
        _set(("definitions", 2, "resource"), "a/{b"),
        FormatError,
        "invalid definition: resource segment 2 '{b' has an unclosed brace",
    ),
    (
        "invalid method inside",
        _set(("definitions", 0, "method"), "FETCH"),
        FormatError,
        "invalid definition: method 'FETCH'",
    ),
    (
        "action syntax error inside",
        _set(("definitions", 0, "action"), "ok = 1\nif ok\n"),
        FormatError,
        "invalid definition: action line 2",
    ),
    (
        "bad constant inside",
        _set(("definitions", 0, "constants"), [{"name": "N", "type": "Integer", "value": "x"}]),
        FormatError,
        "constant N: 'x' is not an Integer",
    ),
    (
        "constants malformed",
        _set(("definitions", 0, "constants"), ["N"]),
        FormatError,
        "the export is malformed",
    ),
    (
        "invalid application id",
        _set(("application", "id"), "no spaces"),
        FormatError,
        "application ID 'no spaces'",
    ),
    (
        "application label not text",
        _set(("application", "label"), 5),
        FormatError,
        "application label must be text",
    ),
    ("definition twice", _duplicate_first, ValidationError, "holds definition"),
]


@pytest.mark.parametrize(
    ("change", "error", "message"),
    [r[1:] for r in IMPORT_REFUSALS],
    ids=[r[0] for r in IMPORT_REFUSALS],
)
def test_import_refused_with_reason_and_nothing_written(
    exported: Path,
    tmp_path: Path,
    change: Change,
    error: type[Exception],
    message: str,
) -> None:
    document = json.loads(exported.read_text())
    document["application"]["id"] = "imported"
    change(document)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(document))
    fresh = Workspace(tmp_path / "fresh")
    before = dump(fresh)
    with pytest.raises(error) as caught:
        fresh.import_application(bad)
    assert message in str(caught.value)
    assert dump(fresh) == before


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "invalid JSON at line 1"),
        (b"not json", "invalid JSON"),
        (b"[1, 2]", "the 'format' field is missing"),
        (b"\xff\xfe\x00garbage", "not UTF-8 text"),
        (b"[" * 100_000 + b"]" * 100_000, "its JSON is nested too deeply to read"),
    ],
)
def test_import_malformed_file_refused(
    workspace: Workspace, tmp_path: Path, content: bytes, message: str
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_bytes(content)
    with pytest.raises(FormatError, match=message):
        workspace.import_application(bad)
    assert workspace.applications() == []


def test_import_missing_file_refused(workspace: Workspace, tmp_path: Path) -> None:
    with pytest.raises(FormatError, match="cannot read"):
        workspace.import_application(tmp_path / "absent.json")


def test_from_document_accepts_a_minimal_document() -> None:
    app, definitions = from_document(
        {
            "format": FORMAT,
            "application": {"id": "a", "type": "REST API"},
            "definitions": [{"id": "x", "label": "X", "method": "get", "resource": "/x/"}],
        }
    )
    assert (app.id, app.label) == ("a", "a")
    assert [(d.app, d.method, d.resource, d.requires_auth) for d in definitions] == [
        ("a", "GET", "x", True)
    ]

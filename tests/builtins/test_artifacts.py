"""fn.notebook_kit.artifacts (print / info / download) and fn.notebook_kit.actions.status(),
end to end through deployed actions on a real server."""

from __future__ import annotations

import base64
import csv
import io
import re
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from test_fn_files import Api, deployed_api

from notebook_kit.builtins.artifacts import render_html
from notebook_kit.workspace.workspace import Workspace

REPORT = "<h1>$title</h1><p>for ${customer.name}: $$${total}</p>$items"
DATA = {
    "title": "Q3 <report>",
    "customer": {"name": "Zoë & Co"},
    "total": 12.5,
    "items": [{"sku": "A-1", "qty": 2}, {"sku": "<b>", "qty": None}],
}


@pytest.fixture
def api(workspace: Workspace) -> Iterator[Api]:
    with deployed_api(workspace) as client:
        yield client


def test_render_html_escapes_values_and_tabulates_rows() -> None:
    html = render_html(REPORT, DATA)
    assert "<h1>Q3 &lt;report&gt;</h1>" in html
    assert "for Zoë &amp; Co: $12.5" in html
    assert "<th>sku</th><th>qty</th>" in html
    assert "<td>&lt;b&gt;</td><td></td>" in html


def test_print_html_then_info_and_download(api: Api) -> None:
    artifact_id = api("notebook_kit.artifacts.print", REPORT, DATA, "html", "q3")
    assert re.fullmatch(r"[0-9a-f]{32}", artifact_id)
    info = api("notebook_kit.artifacts.info", artifact_id)
    assert info["id"] == artifact_id
    assert info["name"] == "q3.html"
    assert info["format"] == "html"
    assert info["contentType"] == "text/html; charset=utf-8"
    assert info["state"] == "ready"
    assert info["path"] == f"artifacts/{artifact_id}.html"
    content = api("notebook_kit.artifacts.download", artifact_id)
    assert content == render_html(REPORT, DATA)
    assert info["size"] == len(content.encode())
    assert api("getFile", info["path"])["content"] == content


def test_print_csv_with_columns_and_download(api: Api) -> None:
    rows = [{"id": "E001", "name": "Ann, Jr.", "age": 30}, {"id": "E002", "name": 'Bo "B"'}]
    artifact_id = api("notebook_kit.artifacts.print", ["name", "id", "age"], rows, "csv")
    content = api("notebook_kit.artifacts.download", artifact_id)
    assert list(csv.reader(io.StringIO(content))) == [
        ["name", "id", "age"],
        ["Ann, Jr.", "E001", "30"],
        ['Bo "B"', "E002", ""],
    ]
    assert api("csvToObject", content)[1] == {"name": 'Bo "B"', "id": "E002", "age": ""}
    info = api("notebook_kit.artifacts.info", artifact_id)
    assert info["name"] == f"{artifact_id}.csv"


def test_print_csv_without_template_takes_every_key(api: Api) -> None:
    artifact_id = api("notebook_kit.artifacts.print", None, [{"a": 1}, {"b": True}], "csv")
    content = api("notebook_kit.artifacts.download", artifact_id)
    assert content.splitlines() == ["a,b", "1,", ",true"]


def test_print_pdf_downloads_bytes_and_presigned_link(api: Api) -> None:
    artifact_id = api("notebook_kit.artifacts.print", REPORT + "<p>€ — ok</p>", DATA, "PDF", "inv")
    content = base64.b64decode(api("notebook_kit.artifacts.download", artifact_id)["base64"])
    assert content.startswith(b"%PDF-") and content.rstrip().endswith(b"%%EOF")
    info = api("notebook_kit.artifacts.info", artifact_id)
    assert (info["format"], info["contentType"]) == ("pdf", "application/pdf")
    assert info["size"] == len(content)
    url = api("notebook_kit.artifacts.download", artifact_id, {"presigned": True, "expiresIn": 60})
    response = httpx.get(url)
    assert response.status_code == 200
    assert response.content == content
    assert response.headers["content-type"] == "application/pdf"
    assert response.headers["content-disposition"] == "inline; filename*=UTF-8''inv.pdf"


@pytest.mark.parametrize(
    ("name", "args", "message"),
    [
        ("print", ["x", {}, "docx"], "format is html, csv or pdf"),
        ("print", ["$missing", {}, "html"], "${missing} has no value"),
        ("print", ["$", {}, "html"], "template is malformed"),
        ("print", [None, {"a": 1}, "csv"], "CSV data is a list of dicts"),
        ("print", [5, [{"a": 1}], "csv"], "list of column names"),
        ("print", ["x", [1, 2], "html"], "data is a dict"),
        ("print", ["x", {}, "html", "a/b"], "without '/'"),
        ("info", ["0" * 32], "no artifact"),
        ("info", ["../../etc/passwd"], "no artifact"),
        ("download", ["f" * 32], "no artifact"),
    ],
)
def test_artifact_functions_refuse_bad_input(
    api: Api, name: str, args: list[Any], message: str
) -> None:
    assert message in api.error(f"notebook_kit.artifacts.{name}", *args)
    assert api("getFileNames", "") == []


def test_download_refuses_unknown_option(api: Api) -> None:
    artifact_id = api("notebook_kit.artifacts.print", "x", {}, "html")
    error = api.error("notebook_kit.artifacts.download", artifact_id, {"as": 1})
    assert "unknown option 'as'" in error


def test_print_refuses_documents_over_max_file_bytes(api: Api) -> None:
    api.set_setting("max_file_bytes", "100")
    error = api.error("notebook_kit.artifacts.print", "$rows", {"rows": list(range(100))}, "html")
    assert "limit (max_file_bytes) is 100" in error
    assert api("getFileNames", "") == []


# -- actions.status ---------------------------------------------------------------------


def test_actions_status_counts_requests_and_keeps_last_error(api: Api) -> None:
    ws = api.workspace
    ws.create("t", "boom", label="boom", method="GET", resource="boom", action="1 / 0")
    ws.deploy("t", "dev")
    ws.deploy("t", "prod")
    boom = f"{api.server.url}/dev/t/boom"
    deadline = time.monotonic() + 5
    while api.http.get(boom, headers=api.headers).status_code == 404:  # live within ~0.3 s
        assert time.monotonic() < deadline
        time.sleep(0.05)
    api.http.get(boom, headers=api.headers)
    api("getFileNames", "")
    deadline = time.monotonic() + 5
    while True:  # servers write the counters every reload interval
        status = api("notebook_kit.actions.status")
        by_id = {entry["id"]: entry for entry in status["dev"]}
        if by_id["boom"]["requests"] >= 2 and by_id["call"]["requests"] >= 1:
            break
        assert time.monotonic() < deadline, status
        time.sleep(0.1)
    assert by_id["boom"]["errors"] == by_id["boom"]["requests"]
    assert by_id["boom"]["lastStatus"] == 500
    assert by_id["boom"]["lastError"] == "ZeroDivisionError: division by zero"
    assert by_id["call"]["errors"] == 0 and by_id["call"]["lastError"] is None
    assert by_id["call"]["lastStatus"] == 200
    assert [e["id"] for e in status["prod"]] == ["boom", "call"]
    assert all(e["requests"] == 0 for e in status["prod"])
    assert by_id["boom"]["resource"] == "boom" and by_id["boom"]["method"] == "GET"

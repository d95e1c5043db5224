"""OpenAPI 3.1 out: built from deployed snapshots, served at a reserved path, written by the
CLI, valid per a real validator, and importable by a standard client (schemathesis)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
from openapi_spec_validator import validate
from schemathesis.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from schemathesis.core.failures import FailureGroup
from support.processes import run_cli

from notebook_kit.domain.openapi import action_statuses, document_path
from notebook_kit.errors import NotFoundError
from notebook_kit.runtime.process.handles import BackgroundServer
from notebook_kit.workspace.workspace import Workspace

# What "conforms to the document" means here; ignored_auth would re-send with made-up keys.
CONFORMANCE = [
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]


def _responses(doc: dict[str, Any], path: str, method: str) -> dict[str, Any]:
    return doc["paths"][path][method]["responses"]


@pytest.mark.parametrize("stage", ["dev", "prod"])
def test_sample_document_valid_per_stage(sample_workspace: Workspace, stage: str) -> None:
    doc = sample_workspace.openapi("restapi_sample", stage, "http://api.example:9000/")
    validate(doc)  # raises on any violation of the OpenAPI 3.1 schema
    assert doc["openapi"] == "3.1.0"
    assert doc["servers"][0]["url"] == f"http://api.example:9000/{stage}/restapi_sample"
    assert sorted(doc["paths"]) == ["/calculator", "/employee/{id}"]
    assert doc["components"]["securitySchemes"]["apiKey"] == {
        "type": "apiKey",
        "in": "header",
        "name": "x-api-key",
        "description": f"The {stage} stage's API key (`notebook-kit keys`).",
    }


@pytest.mark.parametrize(
    ("path", "method", "statuses", "secured", "has_body"),
    [
        ("/employee/{id}", "get", ["200", "403", "404", "500"], True, False),
        ("/employee/{id}", "options", ["200", "404", "500"], False, False),
        ("/calculator", "post", ["200", "400", "403", "404", "413", "500"], True, True),
        ("/calculator", "options", ["200", "404", "500"], False, False),
    ],
)
def test_sample_operation_statuses_security_and_body(
    sample_workspace: Workspace,
    path: str,
    method: str,
    statuses: list[str],
    secured: bool,
    has_body: bool,
) -> None:
    operation = sample_workspace.openapi("restapi_sample", "dev")["paths"][path][method]
    assert list(operation["responses"]) == statuses
    assert (operation.get("security") == [{"apiKey": []}]) is secured
    assert ("requestBody" in operation) is has_body


def test_path_parameters_string_required(sample_workspace: Workspace) -> None:
    item = sample_workspace.openapi("restapi_sample", "dev")["paths"]["/employee/{id}"]
    assert item["parameters"] == [
        {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}
    ]


def test_content_type_of_action_answers(sample_workspace: Workspace) -> None:
    doc = sample_workspace.openapi("restapi_sample", "dev")
    assert _responses(doc, "/employee/{id}", "get")["200"]["content"] == {"application/json": {}}
    assert _responses(doc, "/calculator", "post")["400"]["content"] == {"text/plain": {}}
    runtime_500 = _responses(doc, "/calculator", "post")["500"]["content"]
    assert set(runtime_500) == {"text/plain", "application/json"}  # action's and runtime's


@pytest.mark.parametrize(
    ("source", "literal", "computed"),
    [
        ("res.body = 'x'", set(), False),
        ("res.statusCode = 201", {201}, False),
        ("if x:\n    res.statusCode = 404\nelse:\n    res.statusCode = 409", {404, 409}, False),
        ("res.statusCode = code", set(), True),
        ("res.statusCode += 1", set(), True),
        ("res.statusCode = True", set(), True),
        ("res.statusCode = 999", set(), True),
        ("def helper(r):\n    r.statusCode = 418", {418}, False),
    ],
)
def test_action_statuses_found_by_reading(source: str, literal: set[int], computed: bool) -> None:
    assert action_statuses(source) == (literal, computed)


def test_computed_status_adds_default_response(workspace: Workspace) -> None:
    workspace.create(
        "shop",
        "echo",
        label="Echo",
        method="PUT",
        resource="items/{item}/tags/{tag}",
        action="res.statusCode = int(req.pathParameters['tag'])",
        requires_auth=False,
    )
    workspace.deploy("shop", "dev")
    doc = workspace.openapi("shop", "dev")
    validate(doc)
    item = doc["paths"]["/items/{item}/tags/{tag}"]
    assert [p["name"] for p in item["parameters"]] == ["item", "tag"]
    assert list(item["put"]["responses"]) == ["200", "404", "413", "500", "default"]
    assert "security" not in item["put"]
    assert "securitySchemes" not in doc["components"]  # nothing requires a key


def test_document_follows_deployed_snapshot_not_saved(sample_workspace: Workspace) -> None:
    sample_workspace.edit("restapi_sample", "calculator", resource="calc")
    assert "/calculator" in sample_workspace.openapi("restapi_sample", "dev")["paths"]
    sample_workspace.edit("restapi_sample", "calculator-preflight", resource="calc")
    sample_workspace.deploy("restapi_sample", "dev")
    assert sorted(sample_workspace.openapi("restapi_sample", "dev")["paths"]) == [
        "/calc",
        "/employee/{id}",
    ]
    assert "/calculator" in sample_workspace.openapi("restapi_sample", "prod")["paths"]


def test_openapi_undeployed_app_refused(sample_workspace: Workspace) -> None:
    sample_workspace.undeploy("restapi_sample", "prod")
    with pytest.raises(NotFoundError, match="not deployed to prod"):
        sample_workspace.openapi("restapi_sample", "prod")


def test_runtime_serves_document_at_reserved_path(
    running_server: BackgroundServer, client: httpx.Client, sample_workspace: Workspace
) -> None:
    response = client.get(document_path("dev", "restapi_sample"))
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.headers["access-control-allow-origin"] == "*"
    served = response.json()
    validate(served)
    assert served == sample_workspace.openapi("restapi_sample", "dev", running_server.url)


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [
        ("GET", "/_openapi/dev/nope.json", 404),
        ("GET", "/_openapi/test/restapi_sample.json", 404),
        ("GET", "/_openapi/dev/restapi_sample", 404),
        ("GET", "/_openapi/dev", 404),
        ("GET", "/_openapi/dev/restapi_sample.json/x", 404),
        ("POST", "/_openapi/dev/restapi_sample.json", 405),
    ],
)
def test_runtime_reserved_path_refusals(
    client: httpx.Client, method: str, path: str, status: int
) -> None:
    assert client.request(method, path).status_code == status


def test_reserved_path_cannot_collide_with_user_app(
    sample_workspace: Workspace, client: httpx.Client, running_server: BackgroundServer
) -> None:
    sample_workspace.create(
        "_openapi",
        "hello",
        label="Hello",
        method="GET",
        resource="dev/restapi_sample.json",
        action="res.body = 'user answer'",
        requires_auth=False,
    )
    sample_workspace.deploy("_openapi", "dev")
    running_server.sync()
    assert client.get("/dev/_openapi/dev/restapi_sample.json").text == "user answer"
    assert client.get("/_openapi/dev/restapi_sample.json").json()["openapi"] == "3.1.0"
    assert client.get("/_openapi/dev/_openapi.json").json()["paths"].keys() == {
        "/dev/restapi_sample.json"
    }


def test_runtime_document_gone_after_undeploy(
    sample_workspace: Workspace, client: httpx.Client, running_server: BackgroundServer
) -> None:
    sample_workspace.undeploy("restapi_sample", "prod")
    running_server.sync()
    assert client.get("/_openapi/prod/restapi_sample.json").status_code == 404
    assert client.get("/_openapi/dev/restapi_sample.json").status_code == 200


def test_cli_writes_document(sample_workspace: Workspace, tmp_path: Path) -> None:
    target = tmp_path / "sample.json"
    result = run_cli(
        "openapi",
        "restapi_sample",
        "--stage",
        "prod",
        "--output",
        str(target),
        "--base-url",
        "https://api.example",
        home=sample_workspace.home,
        check=True,
    )
    assert "wrote the OpenAPI document of restapi_sample on prod" in result.stdout
    doc = json.loads(target.read_text())
    validate(doc)
    assert doc["servers"][0]["url"] == "https://api.example/prod/restapi_sample"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nope", "--stage", "dev"], "application 'nope' is not deployed to dev"),
        (["restapi_sample", "--stage", "test"], "Invalid value for '--stage'"),
        (["restapi_sample", "--stage", "dev", "-o", "/nonexistent/x.json"], "cannot write"),
    ],
)
def test_cli_openapi_refusals(sample_workspace: Workspace, args: list[str], message: str) -> None:
    result = run_cli("openapi", *args, home=sample_workspace.home)
    assert result.returncode in (1, 2)
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_schemathesis_imports_served_document_and_live_answers_conform(
    running_server: BackgroundServer, keys: dict[str, str]
) -> None:
    schema = schemathesis.openapi.from_url(
        running_server.url + document_path("dev", "restapi_sample")
    )
    calculator = schema["/calculator"]["POST"]
    calls = [
        (calculator.Case(body={"arg1": 1, "arg2": 2, "operation": "plus"}), keys["dev"], 200),
        (calculator.Case(body={"arg1": 1, "operation": "plus"}), keys["dev"], 400),
        (calculator.Case(body={"arg1": 1, "arg2": 2, "operation": "plus"}), "wrong", 403),
        (schema["/employee/{id}"]["GET"].Case(path_parameters={"id": "E009"}), keys["dev"], 404),
    ]
    for case, key, status in calls:
        case.headers = {"x-api-key": key}
        response = case.call()
        assert response.status_code == status
        case.validate_response(response, checks=CONFORMANCE)


def test_schemathesis_flags_undocumented_status(
    running_server: BackgroundServer, sample_workspace: Workspace
) -> None:
    doc = sample_workspace.openapi("restapi_sample", "dev", running_server.url)
    del doc["paths"]["/calculator"]["post"]["responses"]["403"]
    schema = schemathesis.openapi.from_dict(doc)
    schema.config.update(base_url=doc["servers"][0]["url"])
    case = schema["/calculator"]["POST"].Case(body={"arg1": 1, "arg2": 2, "operation": "plus"})
    response = case.call()
    assert response.status_code == 403
    with pytest.raises(FailureGroup):
        case.validate_response(response, checks=CONFORMANCE)

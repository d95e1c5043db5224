"""OpenAPI 3.1 out: built from deployed snapshots, served at a reserved path, written by the
CLI, valid per a real validator, and importable by a standard client (schemathesis). What
it declares of contracts, bodies, security, versions and links; the 3.0 export. The real
clients (generators, linters, Postman, schemathesis' full run) are in
test_openapi_clients.py."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
from openapi_spec_validator import validate
from packaging.version import Version
from schemathesis.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from schemathesis.core.failures import FailureGroup
from support import shop
from support.processes import run_cli
from support.shop import ITEM_SCHEMA, shop_definitions

from notebook_kit.domain.contracts import Contract
from notebook_kit.domain.models import Application, Definition
from notebook_kit.domain.openapi import (
    api_version,
    build_document,
    document_path,
    parse_document_name,
)
from notebook_kit.domain.openapi_responses import action_statuses
from notebook_kit.errors import NotFoundError, ValidationError
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


def _document(definitions: list[Definition], version: str = "3.1") -> dict[str, Any]:
    app = Application(definitions[0].app)
    return build_document(app, "dev", definitions, "http://api.example", 7, version)


def _shop_document(declared: bool = True, version: str = "3.1") -> dict[str, Any]:
    return _document(shop_definitions("shop", declared), version)


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


MESSAGE = "#/components/schemas/RuntimeMessage"
JSON = "application/json"
EVERYWHERE = ["400", "404", "408", "414", "429", "431", "500", "502", "503", "504"]


@pytest.mark.parametrize(
    ("path", "method", "statuses", "secured"),
    [
        ("/employee/{id}", "get", ["200", "403", *EVERYWHERE], True),
        ("/employee/{id}", "options", ["200", *EVERYWHERE], False),
        ("/calculator", "post", ["200", "403", "413", *EVERYWHERE], True),
        ("/calculator", "options", ["200", *EVERYWHERE], False),
    ],
)
def test_sample_operation_statuses_and_security(
    sample_workspace: Workspace, path: str, method: str, statuses: list[str], secured: bool
) -> None:
    operation = sample_workspace.openapi("restapi_sample", "dev")["paths"][path][method]
    assert list(operation["responses"]) == sorted(statuses)
    assert operation["security"] == ([{"apiKey": []}] if secured else [])  # [] said, not left out


def test_path_parameters_string_required(sample_workspace: Workspace) -> None:
    item = sample_workspace.openapi("restapi_sample", "dev")["paths"]["/employee/{id}"]
    for method in ("get", "options"):
        assert item[method]["parameters"] == [
            {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}
        ]


def test_content_type_of_action_answers(sample_workspace: Workspace) -> None:
    """An answer without a declared schema: any JSON, any text (so clients read it)."""
    doc = sample_workspace.openapi("restapi_sample", "dev")
    employee_200 = _responses(doc, "/employee/{id}", "get")["200"]["content"]
    assert employee_200 == {"application/json": {"schema": {}}}
    assert _responses(doc, "/calculator", "post")["200"]["content"] == {
        "text/plain": {"schema": {"type": "string"}}
    }
    runtime_500 = _responses(doc, "/calculator", "post")["500"]["content"]  # action's and runtime's
    assert runtime_500 == {
        "application/json": {"schema": {"$ref": "#/components/schemas/RuntimeMessage"}},
        "text/plain": {"schema": {"type": "string"}},
    }


def test_body_without_declaration_is_any_json(sample_workspace: Workspace) -> None:
    body = sample_workspace.openapi("restapi_sample", "dev")["paths"]["/calculator"]["post"]
    assert body["requestBody"]["required"] is False
    assert body["requestBody"]["content"] == {"application/json": {"schema": {}}}  # any JSON
    assert "requestBody" not in _shop_document(declared=False)["paths"]["/items/{id}"]["delete"]


SEMVER = re.compile(
    r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?"
)  # semver.org's own expression


@pytest.mark.parametrize("deployment_id", [None, 1, 3, 10, 12345])
def test_info_version_is_pep440_and_semver(deployment_id: int | None) -> None:
    version = api_version(deployment_id)
    assert str(Version(version)) == version  # valid and already normal for PEP 440
    assert SEMVER.fullmatch(version)


def test_info_keeps_stage_and_deployment(sample_workspace: Workspace) -> None:
    deployment = sample_workspace.deployments("restapi_sample")[0]
    info = sample_workspace.openapi("restapi_sample", deployment.stage)["info"]
    assert info["version"] == f"0.{deployment.id}.0"
    assert info["x-notebook-kit"] == {
        "application": "restapi_sample",
        "stage": str(deployment.stage),
        "deployment": deployment.id,
    }
    assert f"deployment {deployment.id}" in info["description"]


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
    assert [p["name"] for p in item["put"]["parameters"]] == ["item", "tag"]
    assert list(item["put"]["responses"]) == [*sorted(["200", "413", *EVERYWHERE]), "default"]
    assert item["put"]["security"] == []
    assert "securitySchemes" not in doc["components"]  # nothing requires a key


def test_declared_parameters_with_schemas() -> None:
    paths = _shop_document()["paths"]
    assert paths["/items"]["get"]["parameters"] == [
        {
            "name": "limit",
            "in": "query",
            "required": False,
            "schema": {"type": "integer", "minimum": 1, "maximum": 100},
            "description": "At most this many items (20 when not given).",
        },
        {
            "name": "q",
            "in": "query",
            "required": False,
            "schema": {"type": "string"},
            "description": "Only items whose name holds this text.",
        },
    ]
    assert paths["/items/{id}"]["get"]["parameters"] == [
        {"name": "id", "in": "path", "required": True, "schema": {"type": "integer", "minimum": 1}}
    ]
    undeclared = _shop_document(declared=False)["paths"]
    assert "parameters" not in undeclared["/items"]["get"]
    assert undeclared["/items/{id}"]["get"]["parameters"][0]["schema"] == {"type": "string"}


def test_declared_body_and_responses() -> None:
    doc = _shop_document()
    validate(doc)
    create = doc["paths"]["/items"]["post"]
    assert create["requestBody"] == {
        "required": True,
        "content": {"application/json": {"schema": shop.ITEM_FIELDS}},
        "description": "The new item.",
    }
    created = create["responses"]["201"]
    assert created["description"] == "Created: the item and its ID."
    assert created["content"] == {"application/json": {"schema": ITEM_SCHEMA}}
    assert create["responses"]["422"] == {"$ref": "#/components/responses/UnprocessableContent"}
    problem = doc["components"]["responses"]["UnprocessableContent"]["content"]
    assert problem == {
        "application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}
    }
    assert "errors" in doc["components"]["schemas"]["Problem"]["required"]
    deleted = doc["paths"]["/items/{id}"]["delete"]["responses"]["204"]
    assert deleted == {"description": "Deleted."}  # no content, though JSON is the default


def test_undeclared_document_has_no_422_nor_problem() -> None:
    doc = _shop_document(declared=False)
    validate(doc)
    statuses = {
        s for item in doc["paths"].values() for op in item.values() for s in op["responses"]
    }
    assert "422" not in statuses
    assert "Problem" not in doc["components"]["schemas"]
    assert "UnprocessableContent" not in doc["components"]["responses"]  # none unused


def test_declared_status_the_runtime_also_gives_is_either() -> None:
    not_found = _shop_document()["paths"]["/items/{id}"]["get"]["responses"]["404"]
    assert not_found["description"].startswith("No item has this ID. Or, from the runtime:")
    schema = not_found["content"]["application/json"]["schema"]
    assert schema == {
        "anyOf": [shop.CONTRACTS["get-item"]["responses"]["404"]["schema"], {"$ref": MESSAGE}]
    }


def test_links_from_created_answer_to_item_operations() -> None:
    created = _shop_document()["paths"]["/items"]["post"]["responses"]["201"]
    assert {name: link["operationId"] for name, link in created["links"].items()} == {
        "delete-item": "delete-item",
        "get-item": "get-item",
        "put-item": "put-item",
    }
    assert all(
        link["parameters"] == {"id": "$response.body#/id"} for link in created["links"].values()
    )
    put = _shop_document()["paths"]["/items/{id}"]["put"]["responses"]["200"]
    assert "links" not in put  # its answer names no parameter its own path lacks


def test_no_link_without_the_parameter_in_the_answer() -> None:
    definitions = shop_definitions("shop")
    contract = dict(shop.CONTRACTS["create-item"])
    contract["responses"] = {"201": {"schema": {"type": "object", "properties": {"name": {}}}}}
    definitions[1] = replace(definitions[1], contract=Contract.from_dict(contract))
    assert "links" not in _document(definitions)["paths"]["/items"]["post"]["responses"]["201"]
    bare = _shop_document(declared=False)["paths"]["/items"]["post"]["responses"]
    assert not any("links" in response for response in bare.values())


def _with_body_schema(api_id: str, schema: dict[str, Any]) -> Definition:
    return Definition(
        "shop", api_id, api_id, "POST", f"{api_id}/x", contract={"body": {"schema": schema}}
    )


def test_contract_defs_move_to_components() -> None:
    item = {"type": "object", "properties": {"name": {"type": "string"}}}
    one = {"$defs": {"Item": item}, "type": "array", "items": {"$ref": "#/$defs/Item"}}
    same = {"$defs": {"Item": item}, "$ref": "#/$defs/Item"}
    other = {"$defs": {"Item": {"type": "string"}}, "$ref": "#/$defs/Item"}
    tree = {  # refers to itself: the whole schema becomes a component
        "type": "object",
        "properties": {"children": {"type": "array", "items": {"$ref": "#"}}},
    }
    definitions = [
        _with_body_schema(n, s) for n, s in [("a", one), ("b", same), ("c", other), ("d", tree)]
    ]
    doc = _document(definitions)
    validate(doc)
    schemas = doc["components"]["schemas"]
    assert schemas["Item"] == item and schemas["Item2"] == {"type": "string"}

    def body(path: str) -> Any:
        return doc["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"]

    assert body("/a/x") == {"type": "array", "items": {"$ref": "#/components/schemas/Item"}}
    assert body("/b/x") == {"$ref": "#/components/schemas/Item"}
    assert body("/c/x") == {"$ref": "#/components/schemas/Item2"}
    assert body("/d/x") == {"$ref": "#/components/schemas/d.body"}
    children = schemas["d.body"]["properties"]["children"]
    assert children["items"] == {"$ref": "#/components/schemas/d.body"}


@pytest.mark.parametrize(
    ("name", "parsed"),
    [
        ("shop.json", ("shop", "3.1")),
        ("shop.3.0.json", ("shop", "3.0")),
        ("shop.3.1.json", ("shop", "3.1")),
        ("shop.2.0.json", None),
        ("shop", None),
        (".json", None),
        ("shop.3.0", None),
    ],
)
def test_document_names(name: str, parsed: tuple[str, str] | None) -> None:
    assert parse_document_name(name) == parsed


def test_document_paths() -> None:
    assert document_path("dev", "shop") == "/_openapi/dev/shop.json"
    assert document_path("prod", "shop", "3.0") == "/_openapi/prod/shop.3.0.json"


def test_unknown_openapi_version_refused() -> None:
    with pytest.raises(ValidationError, match=r"OpenAPI version must be one of 3\.1, 3\.0"):
        _shop_document(version="2.0")


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


def test_runtime_serves_the_3_0_export(
    running_server: BackgroundServer, client: httpx.Client, sample_workspace: Workspace
) -> None:
    served = client.get(document_path("dev", "restapi_sample", "3.0")).json()
    validate(served)  # detects 3.0 and validates against its schema
    assert served["openapi"] == "3.0.3"
    assert served == sample_workspace.openapi("restapi_sample", "dev", running_server.url, "3.0")


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [
        ("GET", "/_openapi/dev/restapi_sample.2.0.json", 404),
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


def test_cli_writes_the_3_0_export(sample_workspace: Workspace, tmp_path: Path) -> None:
    target = tmp_path / "sample.json"
    args = ["restapi_sample", "--stage", "dev", "--openapi-version", "3.0", "-o", str(target)]
    run_cli("openapi", *args, home=sample_workspace.home, check=True)
    doc = json.loads(target.read_text())
    validate(doc)
    assert doc["openapi"] == "3.0.3"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["restapi_sample", "--stage", "dev", "--openapi-version", "2.0"], "'2.0' is not one of"),
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
        (
            calculator.Case(body={"arg1": 1, "arg2": 2, "operation": "plus"}, media_type=JSON),
            keys["dev"],
            200,
        ),
        (calculator.Case(body={"arg1": 1, "operation": "plus"}, media_type=JSON), keys["dev"], 400),
        (
            calculator.Case(body={"arg1": 1, "arg2": 2, "operation": "plus"}, media_type=JSON),
            "wrong",
            403,
        ),
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
    case = schema["/calculator"]["POST"].Case(
        body={"arg1": 1, "arg2": 2, "operation": "plus"}, media_type=JSON
    )
    response = case.call()
    assert response.status_code == 403
    with pytest.raises(FailureGroup):
        case.validate_response(response, checks=CONFORMANCE)

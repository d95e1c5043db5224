"""The probe application the runtime tests call over HTTP, and its server.

One definition per behaviour under test (routing, echoing ``req``, ``res`` bodies,
constants, user functions, ``db``, ``fn``, async, a failing action, a secured resource),
deployed to both stages. A test module serves it by defining the ``served_home`` fixture
(conftest's ``http`` and ``stage_keys`` then serve that home) as ``probe_home(...)``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from notebook_kit.domain.models import Constant
from notebook_kit.workspace.workspace import Workspace

APP = "probe"
CORS = "*"

ECHO_ACTION = """\
res.body = {
    "httpMethod": req.httpMethod,
    "path": req.path,
    "stage": req.stage,
    "header": req.headers["X-Probe"] if "X-Probe" in req.headers else None,
    "header_lower": req.headers.get("x-probe"),
    "header_upper": req.headers.get("X-PROBE"),
    "queryStringParameters": req.queryStringParameters,
    "pathParameters": req.pathParameters,
    "body": req.body,
}
"""

BODY_ACTION = """\
kind = req.pathParameters["kind"]
if kind == "str":
    res.body = "héllo"
elif kind == "bytes":
    res.body = b"\\x00\\xffraw"
elif kind == "dict":
    res.body = {"a": [1, 2.5, None, True], "b": "é"}
elif kind == "list":
    res.body = [1, "two", {"three": 3}]
elif kind == "none":
    res.body = None
elif kind == "override":
    res.headers["content-type"] = "text/csv; charset=utf-8"
    res.body = "a,b\\n1,2\\n"
elif kind == "override-json":
    res.headers["CONTENT-TYPE"] = "application/vnd.probe+json"
    res.body = {"x": 1}
elif kind == "status":
    res.statusCode = 201
    res.headers["X-Made-By"] = "probe"
    res.body = "created"
"""

CONST_ACTION = """\
res.body = {
    name: [type(getattr(const, name)).__name__, str(getattr(const, name))]
    for name in ("TEXT", "COUNT", "PRICE", "ENABLED", "SETTINGS")
}
"""

FUNCTIONS = """\
GREETING = "hello"


def greet(name):
    return f"{GREETING}, {name}!"
"""

DB_ACTION = """\
db.execute("CREATE TABLE IF NOT EXISTS notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL)")
changed = db.execute("INSERT INTO notes (text) VALUES (?)", [req.body])
rows = db.query("SELECT text FROM notes WHERE text = ?", [req.body])
res.body = {"changed": changed, "rows": rows}
"""

ASYNC_ACTION = """\
import asyncio

await asyncio.sleep(0.01)
res.body = "awaited " + req.queryStringParameters.get("n", "")
"""

DEFINITIONS: list[dict[str, Any]] = [
    {"api_id": "literal", "method": "GET", "resource": "a/b", "action": 'res.body = "literal"'},
    {
        "api_id": "param",
        "method": "GET",
        "resource": "a/{x}",
        "action": 'res.body = {"x": req.pathParameters["x"]}',
    },
    {"api_id": "deep", "method": "GET", "resource": "a/{x}/c", "action": 'res.body = "deep"'},
    {"api_id": "echo", "method": "POST", "resource": "echo/{name}", "action": ECHO_ACTION},
    {"api_id": "echo-put", "method": "PUT", "resource": "echo/{name}", "action": ECHO_ACTION},
    {"api_id": "boom", "method": "GET", "resource": "boom", "action": "res.body = 1 / 0"},
    {
        "api_id": "bad-body",
        "method": "GET",
        "resource": "bad-body",
        "action": "res.body = object()",
    },
    {
        "api_id": "body",
        "method": "GET",
        "resource": "body/{kind}",
        "action": BODY_ACTION,
        "content_type": "text/plain; charset=utf-8",
    },
    {
        "api_id": "const",
        "method": "GET",
        "resource": "const",
        "action": CONST_ACTION,
        "constants": [
            Constant("TEXT", "String", "Employee ID %s"),
            Constant("COUNT", "Integer", 42),
            Constant("PRICE", "Decimal", "0.10"),
            Constant("ENABLED", "Boolean", True),
            Constant("SETTINGS", "JSON", {"k": [1, 2]}),
        ],
    },
    {
        "api_id": "greet",
        "method": "GET",
        "resource": "greet/{name}",
        "action": 'res.body = greet(req.pathParameters["name"])',
        "functions": FUNCTIONS,
    },
    {"api_id": "db", "method": "POST", "resource": "db", "action": DB_ACTION},
    {
        "api_id": "csv",
        "method": "POST",
        "resource": "csv",
        "action": "res.body = fn.csvToObject(req.body)",
    },
    {"api_id": "async", "method": "GET", "resource": "async", "action": ASYNC_ACTION},
    {"api_id": "secure", "method": "GET", "resource": "secure", "action": 'res.body = "secret"'},
]
OPEN = {
    "literal",
    "param",
    "deep",
    "echo",
    "echo-put",
    "boom",
    "bad-body",
    "body",
    "const",
    "greet",
    "db",
    "csv",
    "async",
}


def build_probe(workspace: Workspace) -> None:
    """Create the probe application and deploy it to both stages."""
    for spec in DEFINITIONS:
        spec = dict(spec)
        api_id = spec.pop("api_id")
        workspace.create(APP, api_id, label=api_id, requires_auth=api_id not in OPEN, **spec)
    workspace.deploy(APP, "dev")
    workspace.deploy(APP, "prod")


def probe_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A workspace home with the sample and the probe deployed to both stages."""
    workspace = Workspace(tmp_path_factory.mktemp("runtime") / "workspace")
    workspace.install_sample()
    build_probe(workspace)
    return workspace.home

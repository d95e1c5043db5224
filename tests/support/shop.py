"""A small items API the OpenAPI client tests run: GETs with path and query parameters, a
JSON POST answering ``201 {"id": ...}``, a GET, a PUT and a DELETE of ``items/{id}``.

``install_shop(ws, "shop")`` declares a contract on each definition (parameters, bodies,
responses); ``install_shop(ws, "bare", declared=False)`` is the same API declaring
nothing, so its actions answer malformed input themselves (400, never a 500). Both keep
their rows in one table per application of the environment database.
"""

from __future__ import annotations

from typing import Any

from notebook_kit.domain.constants import Constant
from notebook_kit.domain.contracts import Contract
from notebook_kit.domain.models import Definition
from notebook_kit.workspace.workspace import Workspace

__all__ = ["ITEM_SCHEMA", "install_shop", "shop_definitions"]

ITEM_FIELDS: dict[str, Any] = {
    "type": "object",
    "required": ["name", "price"],
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 40},
        "price": {"type": "number", "minimum": 0, "maximum": 1000000},
    },
    "additionalProperties": False,
}
ITEM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["id", "name", "price"],
    "properties": {
        "id": {"type": "integer"},
        "name": {"type": "string"},
        "price": {"type": "number"},
    },
}
_MESSAGE = {
    "type": "object",
    "required": ["message"],
    "properties": {"message": {"type": "string"}},
}
_ID = {"name": "id", "in": "path", "schema": {"type": "integer", "minimum": 1}}

# Shared by every action (``functions``): reading a body that may be anything, and rows.
FUNCTIONS = """\
import json


def read_item(body):
    \"\"\"(name, price) from a JSON body, or None when it is not one.\"\"\"
    try:
        data = json.loads(body or "null")
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    name, price = data.get("name"), data.get("price")
    if not isinstance(name, str) or not 1 <= len(name) <= 40:
        return None
    if isinstance(price, bool) or not isinstance(price, (int, float)):
        return None
    if not 0 <= price <= 1000000:
        return None
    return name, price


def item_id(text):
    \"\"\"A path's {id} as a row ID, or None.\"\"\"
    return int(text) if text.isascii() and text.isdigit() and len(text) < 12 else None


def find(table, number):
    rows = db.query(f"SELECT id, name, price FROM {table} WHERE id = ?", [number])
    return rows[0] if rows else None
"""

ACTIONS = {
    "list-items": """\
limit = 20
text = req.queryStringParameters.get("limit") or ""
if text.isascii() and text.isdigit() and 1 <= int(text) <= 100:
    limit = int(text)
q = req.queryStringParameters.get("q") or ""
rows = db.query(
    f"SELECT id, name, price FROM {const.TABLE} WHERE instr(name, ?) > 0 ORDER BY id LIMIT ?",
    [q, limit],
)
res.body = {"items": rows}
""",
    "create-item": """\
item = read_item(req.body)
if item is None:
    res.statusCode = 400
    res.body = {"message": "give a JSON object with a name and a price"}
else:
    with db.transaction():
        db.execute(f"INSERT INTO {const.TABLE} (name, price) VALUES (?, ?)", list(item))
        number = db.query("SELECT last_insert_rowid() AS id")[0]["id"]
    res.statusCode = 201
    res.body = {"id": number, "name": item[0], "price": item[1]}
""",
    "get-item": """\
number = item_id(req.pathParameters["id"])
row = None if number is None else find(const.TABLE, number)
if row is None:
    res.statusCode = 404
    res.body = {"message": "no such item"}
else:
    res.body = row
""",
    "put-item": """\
number = item_id(req.pathParameters["id"])
item = read_item(req.body)
if item is None:
    res.statusCode = 400
    res.body = {"message": "give a JSON object with a name and a price"}
elif number is None or find(const.TABLE, number) is None:
    res.statusCode = 404
    res.body = {"message": "no such item"}
else:
    db.execute(f"UPDATE {const.TABLE} SET name = ?, price = ? WHERE id = ?", [*item, number])
    res.body = {"id": number, "name": item[0], "price": item[1]}
""",
    "delete-item": """\
number = item_id(req.pathParameters["id"])
if number is None or not db.execute(f"DELETE FROM {const.TABLE} WHERE id = ?", [number]):
    res.statusCode = 404
    res.body = {"message": "no such item"}
else:
    res.statusCode = 204
    res.body = ""
""",
}

_ITEM_ANSWER = {"schema": ITEM_SCHEMA, "description": "The item."}
_NOT_FOUND = {"schema": _MESSAGE, "description": "No item has this ID."}
CONTRACTS: dict[str, dict[str, Any]] = {
    "list-items": {
        "parameters": [
            {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1,
                                                       "maximum": 100},
             "description": "At most this many items (20 when not given)."},
            {"name": "q", "in": "query", "type": "string",
             "description": "Only items whose name holds this text."},
        ],
        "responses": {
            "200": {
                "schema": {
                    "type": "object",
                    "required": ["items"],
                    "properties": {"items": {"type": "array", "items": ITEM_SCHEMA}},
                },
                "description": "The items, oldest first.",
            }
        },
    },
    "create-item": {
        "body": {"schema": ITEM_FIELDS, "description": "The new item."},
        "responses": {"201": {**_ITEM_ANSWER, "description": "Created: the item and its ID."}},
    },
    "get-item": {
        "parameters": [_ID],
        "responses": {"200": _ITEM_ANSWER, "404": _NOT_FOUND},
    },
    "put-item": {
        "parameters": [_ID],
        "body": {"schema": ITEM_FIELDS},
        "responses": {"200": _ITEM_ANSWER, "404": _NOT_FOUND},
    },
    "delete-item": {
        "parameters": [_ID],
        "responses": {"204": {"description": "Deleted."}, "404": _NOT_FOUND},
    },
}  # fmt: skip

ROUTES = {  # API ID: (label, method, resource, requires a key)
    "list-items": ("List items", "GET", "items", False),
    "create-item": ("Create an item", "POST", "items", True),
    "get-item": ("Get an item", "GET", "items/{id}", True),
    "put-item": ("Replace an item", "PUT", "items/{id}", True),
    "delete-item": ("Delete an item", "DELETE", "items/{id}", True),
}


def shop_definitions(app: str, declared: bool = True) -> list[Definition]:
    """The definitions ``install_shop`` saves (with contracts when ``declared``)."""
    table = f"{app.replace('-', '_')}_item"
    return [
        Definition(
            app,
            api_id,
            label,
            method,
            resource,
            action=ACTIONS[api_id],
            content_type="application/json",
            requires_auth=requires_auth,
            functions=FUNCTIONS,
            constants=(Constant("TABLE", "String", table),),
            contract=Contract.from_dict(CONTRACTS[api_id] if declared else None),
        )
        for api_id, (label, method, resource, requires_auth) in ROUTES.items()
    ]


def install_shop(ws: Workspace, app: str, declared: bool = True, stage: str | None = "dev") -> None:
    """Create ``app`` (with contracts when ``declared``) and its table; deploy it to
    ``stage`` (None: not yet)."""
    table = f"{app.replace('-', '_')}_item"
    ws.database.execute(
        f"CREATE TABLE IF NOT EXISTS {table} "
        "(id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL, price REAL NOT NULL)"
    )
    for d in shop_definitions(app, declared):
        ws.create(
            app,
            d.id,
            label=d.label,
            method=d.method,
            resource=d.resource,
            action=d.action,
            functions=d.functions,
            content_type=d.content_type,
            requires_auth=d.requires_auth,
            constants=d.constants,
            contract=d.contract,
        )
    if stage is not None:
        ws.deploy(app, stage)

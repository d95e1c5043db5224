"""Hand-written bare Sanic app doing the same work as notebook_kit's sample API.

It is the baseline of the load benchmark (see bench/README.md):

    python bench/bare_app.py --port P --db FILE --key KEY --workers N

Sanic starts its workers with the "spawn" method, which re-runs this file in each
worker with the same ``sys.argv``; that is why the options are parsed at import time.
"""

from __future__ import annotations

import argparse
import hmac
import json
import sqlite3
from decimal import Context, Decimal
from typing import Any

import jsonschema_rs
from sanic import Request, Sanic
from sanic.response import HTTPResponse

LIMIT = Decimal(99999999)
EXACT = Context(prec=1000)  # exact for any two doubles in range, as the sample's
BAD_INPUT = "Input values are incorrect."
CORS = {"Access-Control-Allow-Origin": "*"}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--db", required=True, help="SQLite file with the employee table")
    parser.add_argument("--key", required=True, help="value required in the x-api-key header")
    parser.add_argument("--workers", type=int, default=1)
    return parser.parse_args(argv)


OPTIONS = parse_args()
KEY = OPTIONS.key.encode()
app = Sanic("bench_bare", configure_logging=False)
_connection: sqlite3.Connection | None = None


def connection() -> sqlite3.Connection:
    """One connection per worker process, opened on first use."""
    global _connection
    if _connection is None:
        _connection = sqlite3.connect(OPTIONS.db)
    return _connection


def authorised(request: Request) -> bool:
    given = request.headers.get("x-api-key")
    return given is not None and hmac.compare_digest(given.encode("utf-8", "surrogateescape"), KEY)


def json_answer(data: dict[str, Any], status: int = 200) -> HTTPResponse:
    # The stdlib's default separators, as the sample's answers are specified byte for byte.
    return HTTPResponse(json.dumps(data).encode(), status, CORS, "application/json")


def text_answer(body: str, status: int = 200) -> HTTPResponse:
    return HTTPResponse(body.encode(), status, CORS, "text/plain")


def forbidden() -> HTTPResponse:
    return json_answer({"message": "Forbidden"}, 403)


def reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed")


DECODER = json.JSONDecoder(parse_constant=reject_constant)  # built once, as the sample's


def to_decimal(value: Any) -> Decimal:
    """A JSON number as a Decimal within the allowed range, or ValueError."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("not a number")
    number = Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
    if not number.is_finite() or not -LIMIT <= number <= LIMIT:
        raise ValueError("out of range")
    return number


def calculate(body: bytes) -> str:
    """The calculator's result as text, or ValueError for any bad input."""
    try:
        data = DECODER.decode(body.decode())
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError("not JSON") from error
    if not isinstance(data, dict):
        raise ValueError("not an object")
    arg1, arg2 = to_decimal(data.get("arg1")), to_decimal(data.get("arg2"))
    operation = data.get("operation")
    if operation == "plus":
        result = EXACT.add(arg1, arg2)
    elif operation == "minus":
        result = EXACT.subtract(arg1, arg2)
    else:
        raise ValueError("unknown operation")
    if result == 0:
        result = Decimal(0)
    return format(result.normalize(EXACT), "f")


@app.post("/dev/restapi_sample/calculator")
async def calculator(request: Request) -> HTTPResponse:
    if not authorised(request):
        return forbidden()
    try:
        result = calculate(request.body)
    except ValueError:
        return text_answer(BAD_INPUT, 400)
    return text_answer(result)


@app.get("/dev/restapi_sample/employee/<employee_id:str>")
async def employee(request: Request, employee_id: str) -> HTTPResponse:
    if not authorised(request):
        return forbidden()
    row = (
        connection()
        .execute("SELECT id, name, age FROM employee WHERE id = ?", (employee_id,))
        .fetchone()
    )
    if row is None:
        message = f"Employee ID {employee_id} not found."
        return json_answer({"message": message}, 404)
    return json_answer({"id": row[0], "name": row[1], "age": row[2]})


# The validated endpoint's checks, compiled once, as notebook-kit compiles its contract:
# the query's page and the JSON body, each against its schema, before the work.
PAGE = jsonschema_rs.validator_for(
    {"type": "object", "required": ["page"],
     "properties": {"page": {"type": "integer", "minimum": 1, "maximum": 1000}}}
)  # fmt: skip
ITEM = jsonschema_rs.validator_for(
    {
        "type": "object",
        "required": ["name", "qty"],
        "additionalProperties": False,
        "properties": {
            "name": {"type": "string", "minLength": 1},
            "qty": {"type": "integer", "minimum": 1},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
    }
)


@app.post("/dev/bench/items")
async def items(request: Request) -> HTTPResponse:
    """The validated endpoint: a 422 unless the query and the body keep their schemas."""
    if not authorised(request):
        return forbidden()
    page = request.args.get("page")
    query = {"page": int(page) if page is not None and page.isdigit() else page}
    try:
        item = json.loads(request.body)
    except ValueError:
        item = None
    if request.content_type != "application/json" or not (
        PAGE.is_valid(query) and ITEM.is_valid(item)
    ):
        return json_answer({"message": "Unprocessable Content"}, 422)
    answer = {"name": item["name"], "qty": item["qty"], "page": query["page"]}
    return json_answer(answer, 201)


@app.get("/dev/bench/employees")
async def staff(request: Request) -> HTTPResponse:
    """The list endpoint: 20 rows as a JSON list of objects."""
    if not authorised(request):
        return forbidden()
    cursor = connection().execute("SELECT id, name, age FROM staff ORDER BY id LIMIT 20")
    columns = [column[0] for column in cursor.description]
    rows = [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]
    return HTTPResponse(json.dumps(rows).encode(), 200, CORS, "application/json")


if __name__ == "__main__":
    app.run(
        host=OPTIONS.host,
        port=OPTIONS.port,
        workers=OPTIONS.workers,
        single_process=OPTIONS.workers == 1,
        access_log=False,
        motd=False,
    )

"""The sample application ``restapi_sample``, as data.

Four ordinary definitions a user can open, read and copy: the employee lookup (GET) and
the calculator (POST), each with the OPTIONS preflight a browser needs. They behave
exactly as the product spec says, to the byte.
"""

from __future__ import annotations

from .models import Application, Constant, Definition

__all__ = ["EMPLOYEES", "SAMPLE_APP", "sample_definitions"]

SAMPLE_APP = Application("restapi_sample", "REST API sample")

EMPLOYEES = (
    ("E001", "Alice Martin", 34),
    ("E002", "Bob Tanaka", 45),
    ("E003", "Chloe Dubois", 28),
    ("E004", "Daniel Okafor", 52),
    ("E005", "Eva Lindqvist", 39),
)

EMPLOYEE_TABLE = """
CREATE TABLE IF NOT EXISTS employee (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    age INTEGER NOT NULL
)"""

EMPLOYEE_ACTION = """\
# Employee lookup: GET employee/{id}
# Reads one record from the environment database's `employee` table.
employee_id = req.pathParameters["id"]
res.headers["Access-Control-Allow-Origin"] = "*"
try:
    rows = db.query("SELECT id, name, age FROM employee WHERE id = ?", [employee_id])
except Exception:
    res.statusCode = 500
    res.body = {"message": const.MESSAGE_EMPLOYEE_INTERNAL_SERVER_ERROR}
else:
    if rows:
        res.body = rows[0]
    else:
        res.statusCode = 404
        res.body = {"message": const.MESSAGE_EMPLOYEE_NOT_FOUND % employee_id}
"""

CALCULATOR_FUNCTIONS = '''\
"""Helpers of the calculator: strict JSON-number parsing and exact decimal arithmetic."""
import json
from decimal import Context, Decimal

LIMIT = Decimal(99999999)
EXACT = Context(prec=1000)  # enough digits for any two doubles in range: always exact
OPERATIONS = {"plus": EXACT.add, "minus": EXACT.subtract}


class BadInput(Exception):
    """The request body breaks one of the calculator's rules (answered with 400)."""


def refuse_constant(name):
    # json accepts NaN, Infinity and -Infinity by default; they are not JSON numbers.
    raise BadInput(f"{name} is not a JSON number")


# Built once: json.loads(body, parse_constant=...) would build a decoder on every call.
DECODER = json.JSONDecoder(parse_constant=refuse_constant)


def to_decimal(value):
    """A JSON number as the shortest decimal that round-trips its IEEE 754 double."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BadInput("not a JSON number")
    number = Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
    if not -LIMIT <= number <= LIMIT:
        raise BadInput("out of range")
    return number


def parse_body(body):
    """Return (arg1, arg2, operation) from the request body, or raise BadInput."""
    try:
        data = DECODER.decode(body)
    except (ValueError, RecursionError):  # deeply nested JSON exhausts the parser's stack
        raise BadInput("not parseable JSON") from None
    if not isinstance(data, dict):
        raise BadInput("not a JSON object")
    operation = data.get("operation")
    if not isinstance(operation, str) or operation not in OPERATIONS:
        raise BadInput("operation must be plus or minus")
    return to_decimal(data.get("arg1")), to_decimal(data.get("arg2")), operation


def calculate(arg1, arg2, operation):
    """The exact result as a plain decimal string, without exponent notation."""
    result = OPERATIONS[operation](arg1, arg2)
    return "0" if result == 0 else format(result.normalize(EXACT), "f")
'''

CALCULATOR_ACTION = """\
# Calculator: POST calculator with {"arg1": number, "arg2": number, "operation": "plus"|"minus"}
res.headers["Access-Control-Allow-Origin"] = "*"
try:
    arg1, arg2, operation = parse_body(req.body)
    res.body = calculate(arg1, arg2, operation)
except BadInput:
    res.statusCode = 400
    res.body = const.MESSAGE_CALC_BAD_REQUEST
except Exception:
    res.statusCode = 500
    res.body = const.MESSAGE_CALC_INTERNAL_SERVER_ERROR
"""

PREFLIGHT_ACTION = """\
# CORS preflight: a browser sends OPTIONS before a call that is not a "simple request".
res.statusCode = 200
res.headers["Access-Control-Allow-Origin"] = "*"
res.headers["Access-Control-Allow-Methods"] = "GET, POST, OPTIONS"
res.headers["Access-Control-Allow-Headers"] = "origin,x-api-key"
"""


def sample_definitions() -> list[Definition]:
    app = SAMPLE_APP.id
    employee_constants = (
        Constant("MESSAGE_EMPLOYEE_INTERNAL_SERVER_ERROR", "String", "System error."),
        Constant("MESSAGE_EMPLOYEE_NOT_FOUND", "String", "Employee ID %s not found."),
    )
    calculator_constants = (
        Constant("MESSAGE_CALC_BAD_REQUEST", "String", "Input values are incorrect."),
        Constant("MESSAGE_CALC_INTERNAL_SERVER_ERROR", "String", "System error."),
    )
    return [
        Definition(
            app,
            "employee",
            "Employee lookup",
            "GET",
            "employee/{id}",
            action=EMPLOYEE_ACTION,
            content_type="application/json",
            constants=employee_constants,
        ),
        Definition(
            app,
            "employee-preflight",
            "Employee lookup: CORS preflight",
            "OPTIONS",
            "employee/{id}",
            action=PREFLIGHT_ACTION,
            requires_auth=False,
        ),
        Definition(
            app,
            "calculator",
            "Calculator",
            "POST",
            "calculator",
            action=CALCULATOR_ACTION,
            functions=CALCULATOR_FUNCTIONS,
            content_type="text/plain",
            constants=calculator_constants,
        ),
        Definition(
            app,
            "calculator-preflight",
            "Calculator: CORS preflight",
            "OPTIONS",
            "calculator",
            action=PREFLIGHT_ACTION,
            requires_auth=False,
        ),
    ]

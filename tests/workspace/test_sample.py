"""The sample application ``restapi_sample`` over real HTTP, to the byte (issue 2 §6).

One in-thread server per module (conftest's ``http`` over ``served_home``) serves the
sample (plus a deliberately broken copy of the calculator for the 500 path); tests that
damage the environment database get their own.
"""

from __future__ import annotations

import json
import math
from decimal import Decimal, localcontext
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.polling import wait_until

from notebook_kit.domain.sample import CALCULATOR_FUNCTIONS, EMPLOYEES
from notebook_kit.sandbox.pace import PROMOTE_AFTER
from notebook_kit.workspace.workspace import Workspace

STAGES = ("dev", "prod")
CALCULATOR = "/{stage}/restapi_sample/calculator"
EMPLOYEE = "/{stage}/restapi_sample/employee/{id}"
BAD = b"Input values are incorrect."
SYSTEM_ERROR = b"System error."

# The calculator's user functions with a precision misconfiguration: an inexact sum now
# raises decimal.Inexact inside calculate(), a real unexpected failure (no mocks).
BROKEN_FUNCTIONS = CALCULATOR_FUNCTIONS.replace(
    "EXACT = Context(prec=1000)", "EXACT = Context(prec=1, traps=[Inexact])"
).replace(
    "from decimal import Context, Decimal",
    "from decimal import Context, Decimal, Inexact",
)


@pytest.fixture(scope="module")
def served_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    workspace = Workspace(tmp_path_factory.mktemp("sample") / "workspace")
    workspace.install_sample()
    assert BROKEN_FUNCTIONS != CALCULATOR_FUNCTIONS
    workspace.copy("restapi_sample", "calculator", "broken_calc")
    workspace.edit("broken_calc", "calculator", functions=BROKEN_FUNCTIONS)
    for stage in STAGES:
        workspace.deploy("broken_calc", stage)
    return workspace.home


def calculate(http: httpx.Client, key: str, body: bytes, stage: str = "dev") -> httpx.Response:
    return http.post(
        CALCULATOR.format(stage=stage),
        content=body,
        headers={"x-api-key": key, "Content-Type": "application/json"},
    )


def calc_body(arg1: Any, arg2: Any, operation: Any = "plus") -> bytes:
    return json.dumps({"arg1": arg1, "arg2": arg2, "operation": operation}).encode()


def raw(arg1: str, arg2: str, operation: str = '"plus"') -> bytes:
    """A body with the numbers written exactly as given (JSON number text)."""
    return f'{{"arg1": {arg1}, "arg2": {arg2}, "operation": {operation}}}'.encode()


# -- calculator: valid input -----------------------------------------------------------------

VALID = [
    (raw("0.1", "0.2"), b"0.3"),
    (raw("1.5", "1.5", '"minus"'), b"0"),
    (raw("2.50", "2.50"), b"5"),
    (raw("1e-7", "0"), b"0.0000001"),
    (raw("1E-7", "0"), b"0.0000001"),
    (raw("-0.0", "0"), b"0"),
    (raw("0", "-0.0", '"minus"'), b"0"),
    (raw("-0", "-0"), b"0"),
    (raw("1", "2"), b"3"),
    (raw("3", "5", '"minus"'), b"-2"),
    (raw("-5", "3", '"minus"'), b"-8"),
    (raw("1.1", "2.2"), b"3.3"),
    (raw("0.1", "0.3", '"minus"'), b"-0.2"),
    (raw("12.5", "0.25", '"minus"'), b"12.25"),
    (raw("100", "0.5", '"minus"'), b"99.5"),
    (raw("50", "50"), b"100"),
    (raw("1e7", "0"), b"10000000"),
    (raw("1E2", "1e0"), b"101"),
    (raw("1.0", "1"), b"2"),
    (raw("99999999", "99999999"), b"199999998"),
    (raw("-99999999", "99999999", '"plus"'), b"0"),
    (raw("-99999999", "99999999", '"minus"'), b"-199999998"),
    (raw("99999999.0", "0"), b"99999999"),
    (raw("-99999999", "0"), b"-99999999"),
    (raw("1234567.891234567", "0"), b"1234567.891234567"),
    (raw("0.1234567890123456", "0.0000000000000001"), b"0.1234567890123457"),
    # 16 digits that no double holds: the double's shortest round-trip decimal is used.
    (raw("9999999.999999999", "0"), b"9999999.999999998"),
    (raw("0.30000000000000004", "0.1", '"minus"'), b"0.20000000000000004"),
    (raw("1e-300", "0"), b"0." + b"0" * 299 + b"1"),
    (raw("1e-300", "1e-300", '"minus"'), b"0"),
    (raw("5e-324", "0"), b"0." + b"0" * 323 + b"5"),
    (raw("99999999", "1e-300"), b"99999999." + b"0" * 299 + b"1"),
    (b' \n{"operation": "plus", "arg2": 2, "arg1": 1, "extra": [null]}\t', b"3"),
]


@pytest.mark.parametrize("stage", STAGES)
@pytest.mark.parametrize(("body", "expected"), VALID)
def test_calculator_answers_exact_decimal_when_input_valid(
    http: httpx.Client, stage_keys: dict[str, str], stage: str, body: bytes, expected: bytes
) -> None:
    response = calculate(http, stage_keys[stage], body, stage)
    assert response.status_code == 200, response.content
    assert response.headers["content-type"] == "text/plain"
    assert response.headers["access-control-allow-origin"] == "*"
    assert response.content == expected


# -- calculator: every 400 -------------------------------------------------------------------

INVALID = {
    "just above the upper bound": raw("99999999.0000001", "0"),
    "just below the lower bound": raw("-99999999.0000001", "0"),
    "arg2 just above the bound": raw("0", "99999999.00000001"),
    "integer past the bound": raw("100000000", "0"),
    "huge exponent": raw("1e300", "0"),
    "huge negative exponent": raw("0", "-1e300"),
    "beyond double range": raw("1e309", "0"),
    "huge integer": raw("123456789012345678901234567890", "0"),
    "numeric string arg1": calc_body("1", 2),
    "numeric string arg2": calc_body(1, "2"),
    "true": calc_body(True, 1),
    "false": calc_body(1, False),
    "null": calc_body(None, 1),
    "list arg": calc_body([1], 1),
    "object arg": calc_body({"n": 1}, 1),
    "NaN literal": raw("NaN", "1"),
    "Infinity literal": raw("Infinity", "1"),
    "-Infinity literal": raw("1", "-Infinity"),
    "arg1 missing": b'{"arg2": 1, "operation": "plus"}',
    "arg2 missing": b'{"arg1": 1, "operation": "minus"}',
    "operation missing": b'{"arg1": 1, "arg2": 2}',
    "everything missing": b"{}",
    "operation PLUS": calc_body(1, 2, "PLUS"),
    "operation Minus": calc_body(1, 2, "Minus"),
    "operation empty": calc_body(1, 2, ""),
    "operation padded": calc_body(1, 2, "plus "),
    "operation number": calc_body(1, 2, 1),
    "operation list": calc_body(1, 2, []),
    "operation object": calc_body(1, 2, {}),
    "operation null": calc_body(1, 2, None),
    "operation times": calc_body(1, 2, "times"),
    "array body": b"[]",
    "array of the fields": b'[{"arg1": 1, "arg2": 2, "operation": "plus"}]',
    "string body": b'"x"',
    "number body": b"1",
    "null body": b"null",
    "true body": b"true",
    "empty body": b"",
    "whitespace body": b"  \n",
    "truncated": b'{"arg1": 1, "arg2": 2, "operation": "plus"',
    "trailing garbage": b'{"arg1": 1, "arg2": 2, "operation": "plus"} x',
    "single quotes": b"{'arg1': 1, 'arg2': 2, 'operation': 'plus'}",
    "leading zero": raw("01", "2"),
    "hex number": raw("0x10", "2"),
    "plus sign": raw("+1", "2"),
    "bare dot": raw(".5", "2"),
    "invalid UTF-8 bytes": b"\xff\xfe\xfd",
    "invalid UTF-8 in operation": b'{"arg1": 1, "arg2": 2, "operation": "plus\xff"}',
    "Latin-1 body": '{"arg1": 1, "arg2": 2, "operation": "plüs"}'.encode("latin-1"),
    # Deep nesting exhausts the JSON parser's stack (RecursionError): still 400, not 500.
    "deep nesting in an argument": raw("[" * 100_000 + "]" * 100_000, "2"),
    "deep nesting at the top": b"[" * 100_000 + b"]" * 100_000,
    "deep nesting in an ignored field": b'{"arg1": 1, "arg2": 2, "operation": "plus", "x": '
    + b'{"a": ' * 50_000
    + b"1"
    + b"}" * 50_001,
    "deep unclosed nesting": b'{"arg1": ' + b"[" * 100_000,
}


@pytest.mark.parametrize("stage", STAGES)
@pytest.mark.parametrize("body", list(INVALID.values()), ids=list(INVALID))
def test_calculator_answers_400_when_input_invalid(
    http: httpx.Client, stage_keys: dict[str, str], stage: str, body: bytes
) -> None:
    response = calculate(http, stage_keys[stage], body, stage)
    assert response.status_code == 400
    assert response.headers["content-type"] == "text/plain"
    assert response.headers["access-control-allow-origin"] == "*"
    assert response.content == BAD


@pytest.mark.parametrize("stage", STAGES)
def test_calculator_answers_500_system_error_when_calculation_fails(
    http: httpx.Client, stage_keys: dict[str, str], stage: str
) -> None:
    path = f"/{stage}/broken_calc/calculator"
    headers = {"x-api-key": stage_keys[stage]}
    exact = http.post(path, content=raw("1", "2"), headers=headers)
    assert (exact.status_code, exact.content) == (200, b"3")  # the copy still works
    response = http.post(path, content=raw("1.5", "1.25"), headers=headers)
    assert response.status_code == 500
    assert response.headers["content-type"] == "text/plain"
    assert response.headers["access-control-allow-origin"] == "*"
    assert response.content == SYSTEM_ERROR


# -- calculator: any JSON body gets 200 or 400, never 500 ------------------------------------

LIMIT = Decimal(99999999)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
in_range = (
    st.integers(min_value=-99999999, max_value=99999999)
    | st.floats(min_value=-99999999, max_value=99999999)
    | st.sampled_from([99999999, -99999999, 99999999.0, 0.1, 0.2, -0.0, 1e-7, 5e-324, 1e-300])
)
numbers = (
    in_range
    | st.integers()
    | st.floats()  # NaN and infinities too: json.dumps writes them as literals
    | st.sampled_from([100000000, 99999999.0000001, -99999999.00000001, 1e300])
)
arguments = numbers | json_values
operations = st.sampled_from(["plus", "minus", "PLUS", "", "minus "]) | json_values
calculator_objects = st.fixed_dictionaries(
    {},
    optional={"arg1": arguments, "arg2": arguments, "operation": operations},
)

likely_valid_objects = st.fixed_dictionaries(
    {"arg1": in_range, "arg2": in_range, "operation": st.sampled_from(["plus", "minus"])}
)


def oracle(data: Any) -> bytes | None:
    """The expected 200 body, or None for a 400: written apart from the sample's code."""
    if not isinstance(data, dict) or data.get("operation") not in ("plus", "minus"):
        return None
    values = []
    for name in ("arg1", "arg2"):
        value = data.get(name)
        if type(value) not in (int, float):
            return None
        if not math.isfinite(value):
            return None
        number = Decimal(repr(value))
        if abs(number) > LIMIT:
            return None
        values.append(number)
    with localcontext() as context:
        context.prec = 2000
        result = values[0] + values[1] if data["operation"] == "plus" else values[0] - values[1]
    text = f"{result:f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return b"0" if text in ("0", "-0") else text.encode()


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(body=json_values | calculator_objects | likely_valid_objects)
def test_calculator_never_answers_500_for_any_json_body(
    http: httpx.Client, stage_keys: dict[str, str], body: Any
) -> None:
    response = calculate(http, stage_keys["dev"], json.dumps(body).encode())
    expected = oracle(body)
    assert response.headers["content-type"] == "text/plain"
    if expected is None:
        assert (response.status_code, response.content) == (400, BAD)
    else:
        assert (response.status_code, response.content) == (200, expected)


# -- employee ----------------------------------------------------------------------------------


@pytest.mark.parametrize("stage", STAGES)
@pytest.mark.parametrize(("employee_id", "name", "age"), EMPLOYEES)
def test_employee_answers_record_when_id_known(
    http: httpx.Client,
    stage_keys: dict[str, str],
    stage: str,
    employee_id: str,
    name: str,
    age: int,
) -> None:
    response = http.get(
        EMPLOYEE.format(stage=stage, id=employee_id), headers={"x-api-key": stage_keys[stage]}
    )
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.headers["access-control-allow-origin"] == "*"
    expected = f'{{"id": "{employee_id}", "name": "{name}", "age": {age}}}'.encode()
    assert response.content == expected
    record = response.json()
    assert list(record) == ["id", "name", "age"]
    assert type(record["age"]) is int


def test_employee_sample_holds_five_records_e001_to_e005() -> None:
    assert [e[0] for e in EMPLOYEES] == ["E001", "E002", "E003", "E004", "E005"]
    assert all(isinstance(name, str) and name and type(age) is int for _, name, age in EMPLOYEES)


NOT_FOUND = [
    ("E006", b'{"message": "Employee ID E006 not found."}'),
    ("e001", b'{"message": "Employee ID e001 not found."}'),
    ("E0001", b'{"message": "Employee ID E0001 not found."}'),
    ("X%2099", b'{"message": "Employee ID X 99 not found."}'),
    ("%C3%A9", b'{"message": "Employee ID \\u00e9 not found."}'),
    ("a%22b", b'{"message": "Employee ID a\\"b not found."}'),
    ("100%25", b'{"message": "Employee ID 100% not found."}'),
    ("a%2Fb", b'{"message": "Employee ID a/b not found."}'),
]


@pytest.mark.parametrize("stage", STAGES)
@pytest.mark.parametrize(("employee_id", "expected"), NOT_FOUND)
def test_employee_answers_404_message_when_id_unknown(
    http: httpx.Client, stage_keys: dict[str, str], stage: str, employee_id: str, expected: bytes
) -> None:
    response = http.get(
        EMPLOYEE.format(stage=stage, id=employee_id), headers={"x-api-key": stage_keys[stage]}
    )
    assert response.status_code == 404
    assert response.headers["content-type"] == "application/json"
    assert response.headers["access-control-allow-origin"] == "*"
    assert response.content == expected


def test_employee_percent_encoded_id_finds_record(
    http: httpx.Client, stage_keys: dict[str, str]
) -> None:
    response = http.get(
        "/dev/restapi_sample/employee/E%30%30%31", headers={"x-api-key": stage_keys["dev"]}
    )
    assert response.status_code == 200
    assert response.json()["id"] == "E001"


@pytest.mark.parametrize("stage", STAGES)
def test_employee_answers_500_system_error_when_table_is_gone(
    sample_workspace: Workspace, client: httpx.Client, keys: dict[str, str], stage: str
) -> None:
    path = EMPLOYEE.format(stage=stage, id="E001")
    assert client.get(path, headers={"x-api-key": keys[stage]}).status_code == 200
    sample_workspace.database.execute("DROP TABLE employee")
    calls = PROMOTE_AFTER + 8  # in an action process first, then inline in the worker
    for _ in range(calls):
        response = client.get(path, headers={"x-api-key": keys[stage]})
        assert response.status_code == 500
        assert response.headers["content-type"] == "application/json"
        assert response.headers["access-control-allow-origin"] == "*"
        assert response.content == b'{"message": "System error."}'
    # the action caught the error and answered as written; the log says what failed
    entries = logged_after(sample_workspace, path, calls + 1)
    assert entries[0]["error"] is None
    assert {entry["error"] for entry in entries[1:]} == {
        "Caught BuiltinError: db: no such table: employee"
    }
    stats = sample_workspace.store.action_stats()[(stage, "restapi_sample", "employee")]
    assert stats["errors"] == 0  # the action answered: not counted as its error


def logged_after(workspace: Workspace, path: str, count: int) -> list[dict[str, Any]]:
    """The request log's ``count`` entries of ``path``, oldest first, once all are in."""
    found: list[dict[str, Any]] = []

    def written() -> bool:
        found[:] = [e for e in workspace.request_log() if e["path"] == path]
        return len(found) >= count

    wait_until(written, within=5)
    return sorted(found, key=lambda e: e["id"])[-count:]


def test_an_uncaught_db_error_is_named_in_the_dev_answer_and_the_log(
    sample_workspace: Workspace, client: httpx.Client, keys: dict[str, str]
) -> None:
    """An action that does not catch ``db``'s error: dev's answer names it, prod's does
    not, and both calls' log entries do."""
    sample_workspace.create(
        "restapi_sample", "missing", label="missing", method="GET", resource="missing",
        action='res.body = db.query("SELECT id FROM vanished")',
    )  # fmt: skip
    for stage in STAGES:
        sample_workspace.deploy("restapi_sample", stage)
    wait_until(lambda: client.get("/prod/restapi_sample/missing").status_code != 404, within=5)
    error = "BuiltinError: db: no such table: vanished"
    dev = client.get("/dev/restapi_sample/missing", headers={"x-api-key": keys["dev"]})
    assert (dev.status_code, dev.json()) == (
        500,
        {"message": "Internal server error", "error": error},
    )
    prod = client.get("/prod/restapi_sample/missing", headers={"x-api-key": keys["prod"]})
    assert (prod.status_code, prod.json()) == (500, {"message": "Internal server error"})
    for stage in STAGES:
        (entry,) = logged_after(sample_workspace, f"/{stage}/restapi_sample/missing", 1)[-1:]
        assert entry["error"] == error


# -- keys per stage ----------------------------------------------------------------------------


@pytest.mark.parametrize("stage", STAGES)
@pytest.mark.parametrize("path", [CALCULATOR, EMPLOYEE])
def test_sample_refuses_other_stage_key_and_accepts_own(
    http: httpx.Client, stage_keys: dict[str, str], stage: str, path: str
) -> None:
    other = "prod" if stage == "dev" else "dev"
    url = path.format(stage=stage, id="E001")
    method = "POST" if path == CALCULATOR else "GET"
    body = raw("1", "2") if method == "POST" else None
    wrong = http.request(method, url, content=body, headers={"x-api-key": stage_keys[other]})
    assert wrong.status_code == 403
    assert wrong.content == b'{"message": "Forbidden"}'
    missing = http.request(method, url, content=body)
    assert missing.status_code == 403
    right = http.request(method, url, content=body, headers={"x-api-key": stage_keys[stage]})
    assert right.status_code == 200


def test_sample_keys_are_40_alphanumeric_and_distinct(stage_keys: dict[str, str]) -> None:
    assert set(stage_keys) == {"dev", "prod"}
    for key in stage_keys.values():
        assert len(key) == 40 and key.isascii() and key.isalnum()
    assert stage_keys["dev"] != stage_keys["prod"]


# -- OPTIONS preflight -------------------------------------------------------------------------


@pytest.mark.parametrize("stage", STAGES)
@pytest.mark.parametrize(
    "resource", ["calculator", "employee/E001", "employee/anything"], ids=["calc", "emp", "emp-any"]
)
def test_preflight_answers_cors_headers_without_key(
    http: httpx.Client, stage: str, resource: str
) -> None:
    response = http.options(
        f"/{stage}/restapi_sample/{resource}",
        headers={
            "Origin": "https://example.org",
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "x-api-key,content-type",
        },
    )
    assert response.status_code == 200
    assert response.headers["access-control-allow-origin"] == "*"
    assert response.headers["access-control-allow-methods"] == "GET, POST, OPTIONS"
    assert response.headers["access-control-allow-headers"] == "origin,x-api-key"
    assert "content-type" not in response.headers
    assert response.content == b""


def test_the_sample_installs_into_a_postgresql_environment_database(
    workspace: Workspace, request: pytest.FixtureRequest
) -> None:
    """``database_url`` naming PostgreSQL (what several nodes share): the sample's table is
    made and filled there, twice over without a change, and the lookup reads it."""
    from notebook_kit.builtins.sql_db import SqlDatabase
    from notebook_kit.runtime.process.handles import BackgroundServer

    url = request.getfixturevalue("postgres_url")
    shared = SqlDatabase(url)
    shared.execute("DROP TABLE IF EXISTS employee")
    workspace.set_setting("database_url", url)
    workspace.install_sample()
    workspace.install_sample()  # again: the same five rows, nothing added
    rows = shared.query("SELECT id, name, age FROM employee ORDER BY id")
    assert [(r["id"], r["name"], r["age"]) for r in rows] == list(EMPLOYEES)
    key = workspace.keys()["dev"]
    with BackgroundServer(workspace) as server:
        found = httpx.get(
            server.url + EMPLOYEE.format(stage="dev", id="E002"), headers={"x-api-key": key}
        )
        assert found.json() == dict(zip(("id", "name", "age"), EMPLOYEES[1], strict=True))
        shared.execute("DROP TABLE employee")  # the action catches PostgreSQL's error too
        path = EMPLOYEE.format(stage="dev", id="E002")
        gone = httpx.get(server.url + path, headers={"x-api-key": key})
        assert (gone.status_code, gone.content) == (500, b'{"message": "System error."}')
        (entry,) = logged_after(workspace, path, 2)[1:]
    assert entry["error"] == 'Caught BuiltinError: db: relation "employee" does not exist'

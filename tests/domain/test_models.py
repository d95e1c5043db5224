"""The domain records' rules: IDs, labels, methods, resources, content types, constants."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from notebook_kit.domain.models import (
    Application,
    Constant,
    Definition,
    Deployment,
    Stage,
    endpoint_url,
    normalize_resource,
    split_resource,
    validate_id,
)
from notebook_kit.errors import ValidationError


def make(**overrides: Any) -> Definition:
    values: dict[str, Any] = {
        "app": "shop",
        "id": "get_item",
        "label": "Get item",
        "method": "GET",
        "resource": "items/{id}",
    }
    values.update(overrides)
    return Definition(**values)


@pytest.mark.parametrize(
    "value",
    ["a", "A", "0", "_", "-", "get_employee-2", "x" * 64, "ABCxyz_09-"],
)
def test_id_accepted_when_1_to_64_of_allowed_characters(value: str) -> None:
    assert validate_id(value) == value
    assert make(id=value).id == value


@pytest.mark.parametrize(
    "value",
    ["", "x" * 65, "a b", "a/b", "a.b", "é", "a\n", "{id}", "a:b", None, 5],
)
def test_id_refused_when_outside_the_rule(value: Any) -> None:
    with pytest.raises(ValidationError, match="1 to 64 characters") as caught:
        make(id=value)
    assert caught.value.field == "id"


def test_application_id_refused_with_its_own_name() -> None:
    with pytest.raises(ValidationError, match="application ID 'a b'") as caught:
        Application("a b")
    assert caught.value.field == "app"


@pytest.mark.parametrize("label", ["", "   ", "\t\n"])
def test_label_refused_when_empty(label: str) -> None:
    with pytest.raises(ValidationError, match="label must not be empty"):
        make(label=label)


@pytest.mark.parametrize(
    ("given", "stored"),
    [
        ("GET", "GET"),
        ("get", "GET"),
        ("Post", "POST"),
        ("put", "PUT"),
        ("delete", "DELETE"),
        ("OPTIONS", "OPTIONS"),
        ("options", "OPTIONS"),
    ],
)
def test_method_normalised_to_upper_case(given: str, stored: str) -> None:
    assert make(method=given).method == stored


@pytest.mark.parametrize("method", ["PATCH", "HEAD", "", "GETT", "G ET", None])
def test_method_refused_when_not_one_of_five(method: Any) -> None:
    with pytest.raises(ValidationError, match="GET, POST, PUT, DELETE, OPTIONS") as caught:
        make(method=method)
    assert caught.value.field == "method"


@pytest.mark.parametrize(
    ("given", "normalised"),
    [
        ("employee/{id}", "employee/{id}"),
        ("/employee/{id}", "employee/{id}"),
        ("employee/{id}/", "employee/{id}"),
        ("/calculator/", "calculator"),
        ("  calculator  ", "calculator"),
        ("a.b/c~d/e-f/g_h/{_x1}", "a.b/c~d/e-f/g_h/{_x1}"),
        ("{a}/{b}", "{a}/{b}"),
    ],
)
def test_resource_normalised_when_valid(given: str, normalised: str) -> None:
    assert normalize_resource(given) == normalised
    assert make(resource=given).resource == normalised


@pytest.mark.parametrize(
    ("resource", "message"),
    [
        ("a/{b", "resource segment 2 '{b' has an unclosed brace"),
        ("{id", "resource segment 1 '{id' has an unclosed brace"),
        ("a/b}", "resource segment 2 'b}' has a '}' without its '{'"),
        ("a//b", "resource segment 2 is empty ('//')"),
        ("", "resource is empty"),
        ("/", "resource is empty"),
        ("a/{1x}", "resource segment 2 '{1x}': a parameter name must be an identifier"),
        ("{}", "resource segment 1 '{}': a parameter name must be an identifier"),
        ("{a-b}", "resource segment 1 '{a-b}': a parameter name must be an identifier"),
        ("{a}{b}", "resource segment 1 '{a}{b}': a parameter name must be an identifier"),
        ("a b", "resource segment 1 'a b' may only hold A-Z a-z 0-9 . _ ~ -"),
        ("emp/é", "resource segment 2 'é' may only hold"),
        ("a?b", "resource segment 1 'a?b' may only hold"),
        ("a/{id}/b/{id}", "resource segment 4 '{id}' repeats the parameter {id}"),
    ],
)
def test_resource_refused_with_exact_message(resource: str, message: str) -> None:
    with pytest.raises(ValidationError) as caught:
        split_resource(resource)
    assert str(caught.value).startswith(message)
    assert caught.value.field == "resource"
    with pytest.raises(ValidationError, match="resource"):
        make(resource=resource)


def test_definition_reports_segments_and_path_parameters() -> None:
    d = make(resource="/org/{org}/people/{person}/")
    assert d.segments == ("org", "{org}", "people", "{person}")
    assert d.path_parameters == ("org", "person")


@pytest.mark.parametrize(
    ("given", "stored"),
    [
        (None, None),
        ("", None),
        ("  ", None),
        ("application/json", "application/json"),
        ("text/plain; charset=utf-8", "text/plain; charset=utf-8"),
        ('text/plain;charset="utf-8"', 'text/plain;charset="utf-8"'),
        ("application/vnd.api+json", "application/vnd.api+json"),
        (" text/csv ", "text/csv"),
    ],
)
def test_content_type_accepted_when_media_type_or_empty(given: str | None, stored: str) -> None:
    assert make(content_type=given).content_type == stored


@pytest.mark.parametrize(
    "content_type", ["json", "text/", "/plain", "text/plain; charset", "a/b/c", "text plain"]
)
def test_content_type_refused_when_not_media_type(content_type: str) -> None:
    with pytest.raises(ValidationError, match="is not a media type") as caught:
        make(content_type=content_type)
    assert caught.value.field == "content_type"


@pytest.mark.parametrize("value", [1, "yes", None])
def test_requires_auth_refused_when_not_bool(value: Any) -> None:
    with pytest.raises(ValidationError, match="requires_auth"):
        make(requires_auth=value)


def test_requires_auth_defaults_on() -> None:
    assert make().requires_auth is True


@pytest.mark.parametrize(
    ("type_", "value", "expected"),
    [
        ("String", "System error.", "System error."),
        ("String", "", ""),
        ("Integer", 42, 42),
        ("Integer", -7, -7),
        ("Decimal", "1.10", Decimal("1.10")),
        ("Decimal", 3, Decimal(3)),
        ("Decimal", 0.1, Decimal("0.1")),
        ("Boolean", True, True),
        ("Boolean", False, False),
        ("JSON", {"a": [1, 2]}, {"a": [1, 2]}),
        ("JSON", [1, "x", None], [1, "x", None]),
        ("JSON", None, None),
    ],
)
def test_constant_accepted_when_value_fits_type(type_: str, value: Any, expected: Any) -> None:
    constant = Constant("C", type_, value)
    assert constant.value == expected
    assert type(constant.value) is type(expected)


@pytest.mark.parametrize(
    ("type_", "value"),
    [
        ("String", 1),
        ("Integer", "1"),
        ("Integer", True),
        ("Integer", 1.5),
        ("Decimal", "abc"),
        ("Decimal", True),
        ("Decimal", "NaN"),
        ("Decimal", "Infinity"),
        ("Boolean", 1),
        ("Boolean", "true"),
        ("JSON", float("nan")),
        ("JSON", {1, 2}),
    ],
)
def test_constant_refused_when_value_breaks_type(type_: str, value: Any) -> None:
    with pytest.raises(ValidationError, match=f"constant C: .* is not an? {type_}"):
        Constant("C", type_, value)


@pytest.mark.parametrize("type_", ["string", "Float", "Number", "", "Date"])
def test_constant_refused_when_type_unknown(type_: str) -> None:
    with pytest.raises(ValidationError, match="String, Integer, Decimal, Boolean, JSON"):
        Constant("C", type_, "x")


@pytest.mark.parametrize("name", ["", "1A", "a-b", "class", "a b", None])
def test_constant_refused_when_name_not_identifier(name: Any) -> None:
    with pytest.raises(ValidationError, match="must be an identifier"):
        Constant(name, "String", "x")


@pytest.mark.parametrize(
    ("text", "name", "type_", "value"),
    [
        ("MESSAGE:String=System error.", "MESSAGE", "String", "System error."),
        ("M:String=a=b", "M", "String", "a=b"),
        ("M:String=", "M", "String", ""),
        ("LIMIT:Integer=10", "LIMIT", "Integer", 10),
        ("LIMIT:Integer= -3 ", "LIMIT", "Integer", -3),
        ("RATE:Decimal=0.25", "RATE", "Decimal", Decimal("0.25")),
        ("ON:Boolean=true", "ON", "Boolean", True),
        ("ON:Boolean=FALSE", "ON", "Boolean", False),
        ('CFG:JSON={"a": [1, 2]}', "CFG", "JSON", {"a": [1, 2]}),
        ("CFG:JSON=null", "CFG", "JSON", None),
        (" X : String =v", "X", "String", "v"),
    ],
)
def test_constant_from_text_reads_value_per_type(
    text: str, name: str, type_: str, value: Any
) -> None:
    constant = Constant.from_text(text)
    assert (constant.name, constant.type, constant.value) == (name, type_, value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("NAME=1", "must be written NAME:TYPE=VALUE"),
        ("NAME:String", "must be written NAME:TYPE=VALUE"),
        ("NAME", "must be written NAME:TYPE=VALUE"),
        ("N:Integer=ten", "'ten' is not an Integer"),
        ("N:Integer=1.5", "is not an Integer"),
        ("B:Boolean=yes", "'yes' is not a Boolean"),
        ("J:JSON={bad", "is not a JSON"),
        ("D:Decimal=one", "is not a Decimal"),
        ("N:Text=x", "is not one of String"),
        ("1N:String=x", "must be an identifier"),
    ],
)
def test_constant_from_text_refused_with_reason(text: str, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        Constant.from_text(text)


def test_constant_defined_twice_refused() -> None:
    with pytest.raises(ValidationError, match="constant A is defined twice"):
        make(constants=(Constant("A", "String", "x"), Constant("A", "Integer", 1)))


def test_definition_round_trips_through_dict() -> None:
    original = make(
        resource="/items/{id}/",
        method="post",
        content_type="application/json",
        requires_auth=False,
        action="res.body = {'x': const.RATE}\n",
        functions="def helper():\n    return 1\n",
        constants=(
            Constant("RATE", "Decimal", "0.10"),
            Constant("N", "Integer", 3),
            Constant("ON", "Boolean", True),
            Constant("CFG", "JSON", {"k": [1]}),
            Constant("MSG", "String", "hi"),
        ),
    )
    data = original.to_dict()
    assert data["constants"][0] == {"name": "RATE", "type": "Decimal", "value": "0.10"}
    assert data["resource"] == "items/{id}"
    assert data["method"] == "POST"
    assert Definition.from_dict(data) == original


def test_definition_from_dict_applies_defaults() -> None:
    d = Definition.from_dict(
        {"app": "a", "id": "b", "label": "c", "method": "get", "resource": "x"}
    )
    assert (d.action, d.functions, d.constants, d.requires_auth, d.content_type) == (
        "",
        "",
        (),
        True,
        None,
    )
    assert d.created_at and d.updated_at


def test_with_changes_validates_and_stamps_updated_at() -> None:
    d = make(created_at="2020-01-01T00:00:00.000Z", updated_at="2020-01-01T00:00:00.000Z")
    changed = d.with_changes(label="New")
    assert changed.label == "New"
    assert changed.created_at == d.created_at
    assert changed.updated_at > d.updated_at
    with pytest.raises(ValidationError, match="unclosed brace"):
        d.with_changes(resource="a/{b")


def test_application_round_trips_and_defaults_label_to_id() -> None:
    app = Application("shop")
    assert app.label == "shop" and app.type == "REST API"
    assert Application.from_dict(Application("shop", "Shop").to_dict()) == Application(
        "shop", "Shop"
    )


@pytest.mark.parametrize("label", ["", "  ", None])
def test_application_label_defaults_to_id_when_blank(label: Any) -> None:
    assert Application("shop", label).label == "shop"


@pytest.mark.parametrize("label", [5, ["x"], True])
def test_application_label_refused_when_not_text(label: Any) -> None:
    with pytest.raises(ValidationError, match="application label must be text"):
        Application("shop", label)


def test_application_refused_when_type_not_rest_api() -> None:
    with pytest.raises(ValidationError, match="must be 'REST API', not 'Workflow'"):
        Application("shop", "Shop", "Workflow")


@pytest.mark.parametrize(("text", "stage"), [("dev", Stage.DEV), ("prod", Stage.PROD)])
def test_stage_parsed_from_its_name(text: str, stage: Stage) -> None:
    assert Stage.parse(text) is stage


@pytest.mark.parametrize("text", ["Dev", "production", "", "test"])
def test_stage_refused_when_unknown(text: str) -> None:
    with pytest.raises(ValidationError, match="stage must be 'dev' or 'prod'"):
        Stage.parse(text)


def test_endpoint_url_joins_base_stage_app_and_resource() -> None:
    url = endpoint_url("http://127.0.0.1:8000/", "prod", "restapi_sample", "employee/{id}")
    assert url == "http://127.0.0.1:8000/prod/restapi_sample/employee/{id}"


def test_deployment_to_dict_has_plain_values() -> None:
    d = Deployment(3, "a", Stage.DEV, "2024-01-01T00:00:00.000Z", "host", True)
    assert d.to_dict() == {
        "id": 3,
        "app": "a",
        "stage": "dev",
        "deployed_at": "2024-01-01T00:00:00.000Z",
        "host": "host",
        "active": True,
        "forced": False,
        "checks": None,
        "description": "",
    }


_SEGMENT_CHARS = st.sampled_from(list("ab{}/_-.~ 1é?%"))


@given(st.text(_SEGMENT_CHARS, max_size=20))
def test_resource_rule_either_refuses_cleanly_or_normalises_idempotently(text: str) -> None:
    try:
        normalised = normalize_resource(text)
    except ValidationError as exc:
        assert exc.field == "resource"
        return
    assert normalize_resource(normalised) == normalised
    assert not normalised.startswith("/") and not normalised.endswith("/")
    for segment in normalised.split("/"):
        assert segment
        assert ("{" in segment) == segment.startswith("{") == segment.endswith("}")


@given(st.text(max_size=70))
def test_id_rule_refuses_only_with_validation_error(text: str) -> None:
    try:
        assert validate_id(text) == text
    except ValidationError:
        return
    assert 1 <= len(text) <= 64

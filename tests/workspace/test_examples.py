"""Examples: the model and its path syntax, checks on saved and deployed definitions, the
deploy gate (refused whole, or forced and recorded), and examples travelling with export,
import, copy and commit. Real workspaces on temp SQLite files."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from dulwich.repo import Repo

from notebook_kit.domain.answers import RAISED, TIMED_OUT
from notebook_kit.domain.checks import compare
from notebook_kit.domain.examples import Example, Expectation, parse_field, parse_path
from notebook_kit.domain.test_runs import Invocation
from notebook_kit.errors import ExampleFailedError, FormatError, NotFoundError, ValidationError
from notebook_kit.workspace.workspace import Workspace

APP = "restapi_sample"
ALICE = {"path_parameters": {"id": "E001"}}


# -- the model -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "segments"),
    [
        ("name", ("name",)),
        ("items.0.name", ("items", "0", "name")),
        ("$.items.0", ("items", "0")),
        ("$", ()),
        (" a.b ", ("a", "b")),
    ],
)
def test_paths_split_into_segments(path: str, segments: tuple[str, ...]) -> None:
    assert parse_path(path) == segments


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("", "must be text such as 'items.0.name'"),
        ("a..b", "segment 2 is empty"),
        ("a.", "segment 2 is empty"),
        (".a", "segment 1 is empty"),
    ],
)
def test_bad_paths_are_refused_with_the_segment(path: str, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        parse_path(path)


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("name=Alice", ("name", "Alice")),
        ("age=34", ("age", 34)),
        ('code="34"', ("code", "34")),
        ("ok=true", ("ok", True)),
        ("gone=null", ("gone", None)),
        ("tags=[1, 2]", ("tags", [1, 2])),
        ("note=a=b", ("note", "a=b")),
        ("empty=", ("empty", "")),
    ],
)
def test_field_values_are_json_when_they_parse_else_text(text: str, field: Any) -> None:
    assert parse_field(text) == field


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"name": "a b"}, "example name 'a b' must be 1 to 64 characters"),
        ({"expect": {"status": 99}}, "status from 100 to 599, not 99"),
        ({"expect": {"status": True}}, "status from 100 to 599"),
        ({"expect": {"max_ms": 0}}, "more than 0 and at most 3600000"),
        ({"expect": {"max_ms": "soon"}}, "maximum duration must be milliseconds"),
        ({"expect": {"json": {"a..b": 1}}}, "segment 2 is empty"),
        ({"expect": {"statuss": 200}}, "expect has no field 'statuss'; its fields are status"),
        ({"request": {"body": 3}}, "body must be text"),
        ({"request": {"headers": {"a": [1]}}}, "headers must map names to text"),
        ({"request": {"param": {}}}, "request has no field 'param'"),
    ],
)
def test_invalid_examples_say_what_to_fix(given: dict[str, Any], message: str) -> None:
    data = {"app": "a", "api_id": "b", "name": "c", **given}
    with pytest.raises(ValidationError, match=message):
        Example.from_dict(data)


def test_example_round_trips_and_a_dict_body_is_json() -> None:
    example = Example.of(
        "a", "b", "c", {"body": {"x": 1}, "query": "?q=1"}, {"json": {"x": 1}, "max_ms": "50"}
    )
    assert example.request.body == '{"x": 1}'
    assert example.request.query == "q=1"
    assert example.expect.max_ms == 50.0
    assert Example.from_dict(json.loads(json.dumps(example.to_dict()))) == example


BODY = json.dumps({"items": [{"name": "Ada", "n": 1, "ok": True}], "total": 1.0}).encode()


@pytest.mark.parametrize(
    ("expect", "status", "body", "ms", "differences"),
    [
        (Expectation(200, {"items.0.name": "Ada", "total": 1}), 200, BODY, 1, []),
        (Expectation(200, {"$.items.0.ok": True}), 200, BODY, 1, []),
        (Expectation(404), 200, BODY, 1, ["status 200, expected 404"]),
        (
            Expectation(200, {"items.0.name": "Bob"}),
            200,
            BODY,
            1,
            ['items.0.name is "Ada", expected "Bob"'],
        ),
        (Expectation(200, {"items.0.ok": 1}), 200, BODY, 1, ["items.0.ok is true, expected 1"]),
        (Expectation(200, {"items.0.n": True}), 200, BODY, 1, ["items.0.n is 1, expected true"]),
        (
            Expectation(200, {"items.1.name": "Ada"}),
            200,
            BODY,
            1,
            ['items.1.name is missing, expected "Ada"'],
        ),
        (
            Expectation(200, {"$": 0.3}),
            200,
            b"0.3",
            1,
            [],
        ),
        (
            Expectation(200, {"a": 1}),
            200,
            b"plain text",
            1,
            ["the body is not JSON ('plain text'), so no field can be checked"],
        ),
        (Expectation(200, max_ms=5), 200, BODY, 12.5, ["took 12.5 ms, more than the 5 ms allowed"]),
    ],
)
def test_compare_names_each_difference(
    expect: Expectation, status: int, body: bytes, ms: float, differences: list[str]
) -> None:
    assert compare(expect, status, body, ms) == differences


def test_a_raised_action_is_quoted() -> None:
    trace = "Traceback ...\nZeroDivisionError: division by zero\n"
    raised = Invocation(500, {}, b"{}", "application/json", 1, "", trace, RAISED)
    said = compare(Expectation(200), 500, b"{}", 1, raised.reason)
    assert said == [
        "status 500, expected 200 (the action raised ZeroDivisionError: division by zero)"
    ]
    late = Invocation(504, {}, b"{}", "application/json", 1, "", "timed out after 2 s", TIMED_OUT)
    assert late.reason == "the action timed out after 2 s"
    assert Invocation(200, {}, b"{}", None, 1, "").reason is None


# -- checks --------------------------------------------------------------------------------


def _alice(ws: Workspace, name: str = "alice", **expect: Any) -> None:
    wanted = {"status": 200, "json": {"name": "Alice Martin", "age": 34}, **expect}
    ws.add_example(APP, "employee", name, request=ALICE, expect=wanted)


def test_check_runs_on_saved_and_on_a_stage(sample_workspace: Workspace) -> None:
    ws = sample_workspace
    _alice(ws)
    ws.add_example(APP, "employee", "missing", request={"path_parameters": {"id": "E999"}},
                   expect={"status": 404})  # fmt: skip
    report = ws.check(APP)
    assert report.passed and report.target == "saved"
    assert report.summary() == f"all 2 examples of {APP} pass on the saved definitions"
    assert [r.status for r in report.results] == [200, 404]
    assert all(r.duration_ms is not None and r.duration_ms > 0 for r in report.results)
    # the saved action now answers otherwise; dev still serves the old one
    action = ws.get(APP, "employee").action.replace("res.body = rows[0]", "res.body = {}")
    ws.edit(APP, "employee", action=action)
    saved = ws.check(APP)
    assert saved.lines() == [
        'FAIL employee/alice: name is missing, expected "Alice Martin"; age is missing, expected 34'
    ]
    assert saved.summary() == f"1 of 2 examples of {APP} fail on the saved definitions"
    assert ws.check(APP, "dev").passed
    ws.undeploy(APP, "prod")
    with pytest.raises(NotFoundError, match="not deployed to prod"):
        ws.check(APP, "prod")
    with pytest.raises(ValidationError, match="stage must be 'dev' or 'prod'"):
        ws.check(APP, "test")


def test_check_without_examples_passes_and_says_so(sample_workspace: Workspace) -> None:
    report = sample_workspace.check(APP)
    assert report.passed and report.results == ()
    assert report.summary() == f"{APP} has no examples: nothing to check"


def test_a_definition_missing_from_the_stage_fails_its_examples(
    sample_workspace: Workspace,
) -> None:
    ws = sample_workspace
    ws.create(APP, "hello", label="Hello", method="GET", resource="hello",
              action="res.body = {'hi': 1}")  # fmt: skip
    ws.add_example(APP, "hello", "hi", expect={"json": {"hi": 1}})
    assert ws.check(APP).passed
    report = ws.check(APP, "dev")
    assert report.lines() == ["FAIL hello/hi: its definition hello is not in what dev serves"]


# -- the deploy gate -------------------------------------------------------------------------


def test_a_failing_example_refuses_the_deploy_and_changes_nothing(
    sample_workspace: Workspace,
) -> None:
    ws = sample_workspace
    _alice(ws)
    ws.edit(APP, "employee", action="res.body = {'name': 'Alice Martin', 'age': 35}")
    before = (ws.deployments(APP), ws.live("dev"), ws.store.generation())
    with pytest.raises(ExampleFailedError) as refused:
        ws.deploy(APP, "dev")
    assert str(refused.value) == (
        f"deploy of {APP} to dev refused, nothing changed: example employee/alice fails: "
        "age is 35, expected 34 (force=True, CLI --force, deploys anyway)"
    )
    assert refused.value.report.failures[0].key == "employee/alice"  # type: ignore[attr-defined]
    assert (ws.deployments(APP), ws.live("dev"), ws.store.generation()) == before


def test_force_deploys_and_the_history_records_it(sample_workspace: Workspace) -> None:
    ws = sample_workspace
    _alice(ws)
    passing = ws.deploy(APP, "dev")
    assert (passing.forced, passing.checks_summary()) == (False, "1 pass")
    ws.edit(APP, "employee", action="res.statusCode = 500")
    forced = ws.deploy(APP, "dev", force=True)
    assert forced.active and forced.forced
    assert forced.checks is not None and forced.checks["target"] == "deploy to dev"
    assert forced.checks["results"][0]["differences"][0].startswith("status 500, expected 200")
    assert ws.deployments(APP)[-1] == forced
    assert forced.to_dict()["forced"] is True


def test_the_deploy_runs_the_snapshot_it_publishes(sample_workspace: Workspace) -> None:
    ws = sample_workspace
    ws.edit(APP, "employee", action="res.body = {'name': 'Alice Martin', 'new': True}")
    ws.add_example(APP, "employee", "new", request=ALICE, expect={"json": {"new": True}})
    # dev serves the old action, without the field; the deploy runs the saved one
    assert ws.check(APP, "dev").lines() == ["FAIL employee/new: new is missing, expected true"]
    deployment = ws.deploy(APP, "dev")
    assert deployment.checks_summary() == "1 pass"
    assert ws.check(APP, "dev").passed


# -- travelling: export, import, copy, commit ----------------------------------------------


def test_examples_travel_with_export_and_import(
    sample_workspace: Workspace, tmp_path: Path
) -> None:
    ws = sample_workspace
    _alice(ws)
    path = ws.export_file(APP, tmp_path / "app.json")
    document = json.loads(path.read_text())
    assert document["examples"][0]["name"] == "alice"
    assert "app" not in document["examples"][0]
    other = Workspace(tmp_path / "other")
    other.import_application(path)
    assert other.examples(APP) == ws.examples(APP)
    # an export from before examples (no list) still imports, with none
    del document["examples"]
    third = Workspace(tmp_path / "third")
    third.import_application(document)
    assert third.examples(APP) == []
    # replace makes the application what the file holds: its examples go
    other.import_application(document, replace=True)
    assert other.examples(APP) == []


@pytest.mark.parametrize(
    ("examples", "message"),
    [
        ("no", "'examples' is not a list"),
        ([1], "example 1 is not an object"),
        ([{"api_id": "nope", "name": "x"}], "definition 'nope', which the export does not hold"),
        ([{"api_id": "employee", "name": "x"}], r"path parameter \{id\}"),
        ([{"api_id": "employee", "name": "b c"}], "invalid example 1: example name 'b c'"),
        (
            [{"api_id": "calculator", "name": "x"}, {"api_id": "calculator", "name": "x"}],
            "example calculator/x twice",
        ),
    ],
)
def test_a_bad_example_refuses_the_import_whole(
    sample_workspace: Workspace, tmp_path: Path, examples: Any, message: str
) -> None:
    document = {**sample_workspace.export(APP), "examples": examples}
    target = Workspace(tmp_path / "target")
    with pytest.raises(FormatError, match=message):
        target.import_application(document)
    assert target.applications() == []


def test_copy_copies_the_examples(sample_workspace: Workspace) -> None:
    ws = sample_workspace
    _alice(ws)
    ws.copy(APP, "employee", "staff", "person")
    assert [(e.app, e.api_id, e.name) for e in ws.examples("staff")] == [
        ("staff", "person", "alice")
    ]
    assert ws.examples(APP, "employee")[0].expect == ws.examples("staff")[0].expect


def test_commit_writes_each_definitions_examples(
    sample_workspace: Workspace, tmp_path: Path
) -> None:
    ws = sample_workspace
    _alice(ws)
    repo = tmp_path / "repo"
    ws.commit(APP, repo, "with examples", author="A <a@example.com>")
    written = json.loads((repo / APP / "employee" / "examples.json").read_text())
    assert written == [
        {k: v for k, v in ws.examples(APP)[0].to_dict().items() if k not in ("app", "api_id")}
    ]
    assert not (repo / APP / "calculator" / "examples.json").exists()
    ws.remove_example(APP, "employee", "alice")
    ws.commit(APP, repo, "without", author="A <a@example.com>")
    assert not (repo / APP / "employee" / "examples.json").exists()
    with Repo(str(repo)) as git:
        assert f"{APP}/employee/examples.json".encode() not in git.open_index()


def test_an_example_saved_while_the_deploy_runs_them_is_run_too(workspace: Workspace) -> None:
    ws = workspace
    slow = "import time\ntime.sleep(0.6)\nres.body = {'n': 1}"
    ws.create("slow", "one", label="One", method="GET", resource="one", action=slow)
    ws.add_example("slow", "one", "first", expect={"json": {"n": 1}})
    other = Workspace(ws.home)  # another process's view of the store
    saver = threading.Timer(
        0.2, lambda: other.add_example("slow", "one", "late", expect={"json": {"n": 2}})
    )
    saver.start()
    try:
        with pytest.raises(ExampleFailedError, match="example one/late fails: n is 1"):
            ws.deploy("slow", "dev")
    finally:
        saver.join()
    assert ws.deployments("slow") == []

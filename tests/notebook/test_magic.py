"""The ``%%notebook_kit`` cell magic, run by a real IPython shell."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from IPython.core.interactiveshell import InteractiveShell

from notebook_kit import Workspace


@pytest.fixture
def shell(
    sample_workspace: Workspace, capsys: pytest.CaptureFixture[str]
) -> Iterator[InteractiveShell]:
    ip = InteractiveShell.instance()
    result = ip.run_cell("%load_ext notebook_kit", store_history=False)
    assert result.success
    assert "notebook_kit" in ip.magics_manager.magics["cell"]
    ip.user_ns["ws"] = sample_workspace
    capsys.readouterr()  # "already loaded" when an earlier test loaded it
    yield ip
    ip.user_ns.pop("ws", None)


def run(shell: InteractiveShell, line: str, body: str = "") -> None:
    result = shell.run_cell(f"%%notebook_kit {line}\n{body}", store_history=False)
    assert result.error_in_exec is None and result.error_before_exec is None


def test_magic_creates_definition_and_tests_it(
    shell: InteractiveShell, sample_workspace: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    run(
        shell,
        "demo hello --method GET --resource 'hello/{name}' --label 'Say hello' --no-auth "
        "--ws ws --test --path-param name=ada",
        "print('hi')\nres.body = {'hello': req.pathParameters['name']}",
    )

    saved = sample_workspace.get("demo", "hello")
    assert (saved.label, saved.requires_auth) == ("Say hello", False)
    assert saved.action == "print('hi')\nres.body = {'hello': req.pathParameters['name']}\n"
    out, err = capsys.readouterr()
    assert out == 'Created demo/hello (GET /hello/{name})\n200 {"hello": "ada"}\nhi\n'
    assert err == ""


def test_magic_edits_existing_action(
    shell: InteractiveShell, sample_workspace: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    before = sample_workspace.get("restapi_sample", "employee")
    run(shell, "restapi_sample employee --ws ws --label 'Staff'", "res.body = {'id': 1}")

    after = sample_workspace.get("restapi_sample", "employee")
    assert (after.label, after.action, after.resource) == (
        "Staff",
        "res.body = {'id': 1}\n",
        before.resource,
    )
    assert capsys.readouterr().out == (
        "Saved the action of restapi_sample/employee (GET /employee/{id})\n"
    )


def test_magic_uses_home_option(
    shell: InteractiveShell, tmp_path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "elsewhere"
    home.mkdir()
    run(shell, f"demo ping --method GET --resource ping --home {home} --test", "res.body = 'pong'")

    assert Workspace(home).get("demo", "ping").resource == "ping"
    assert capsys.readouterr().out.splitlines()[1] == "200 pong"


def test_magic_refuses_a_home_that_does_not_exist_unless_create(
    shell: InteractiveShell, tmp_path, capsys: pytest.CaptureFixture[str]
) -> None:
    """As on the command line: a mistyped --home makes no workspace; --create makes it."""
    typo = tmp_path / "wrokspace"
    line = f"demo ping --method GET --resource ping --home {typo}"
    run(shell, line, "res.body = 'pong'")

    out, err = capsys.readouterr()
    assert (out, err) == (
        "",
        f"%%notebook_kit: the workspace directory {typo} does not exist "
        "(add --create to make a new workspace there)\n",
    )
    assert not typo.exists()
    run(shell, f"{line} --create", "res.body = 'pong'")
    assert Workspace(typo).get("demo", "ping").resource == "ping"


@pytest.mark.parametrize(
    ("line", "body", "message"),
    [
        ("demo missing --ws ws", "res.body = 1", "demo/missing does not exist; give --method"),
        ("demo x --method GET --resource 'a/{b' --ws ws", "pass", "unclosed brace"),
        ("demo x --method GET --resource a --ws ws", "res.body = (", "action line 1"),
        ("demo x --method GET --resource a --ws nothing", "pass", "no Workspace named nothing"),
        ("demo", "pass", "the following arguments are required: api_id"),
        ("demo x --bogus --ws ws", "pass", "unrecognized arguments: --bogus"),
        ("demo x --path-param oops --method GET --resource a --ws ws", "pass", "NAME=VALUE"),
    ],
)
def test_magic_refusal_is_one_line_and_saves_nothing(
    shell: InteractiveShell,
    sample_workspace: Workspace,
    capsys: pytest.CaptureFixture[str],
    line: str,
    body: str,
    message: str,
) -> None:
    run(shell, line, body)

    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("%%notebook_kit: ") and err.count("\n") == 1
    assert message in err
    assert "Traceback" not in err
    assert [a.id for a in sample_workspace.applications()] == ["restapi_sample"]


def test_magic_test_shows_traceback_of_failing_action(
    shell: InteractiveShell, capsys: pytest.CaptureFixture[str]
) -> None:
    run(shell, "demo boom --method GET --resource boom --ws ws --test", "raise KeyError('gone')")

    out = capsys.readouterr().out
    assert out.splitlines()[1].startswith("500 ")
    assert "KeyError: 'gone'" in out


def test_compile_error_names_its_line_once(
    shell: InteractiveShell, sample_workspace: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    run(shell, "demo x --method GET --resource a --ws ws", "x = 1\nif x\n    pass\n")
    err = capsys.readouterr().err
    assert err.startswith("%%notebook_kit: action line 2: ")
    assert err.count("line 2") == 1, err

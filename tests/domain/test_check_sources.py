"""Every compile error of an action is an ``ActionSyntaxError`` naming its line: the studio
marks that line, the CLI prints one line, nothing escapes as a bare ``SyntaxError``."""

from __future__ import annotations

import pytest

from notebook_kit import Workspace
from notebook_kit.errors import ActionSyntaxError


@pytest.mark.parametrize(
    ("action", "line", "message"),
    [
        ("x = 1\nres.body = (\n", 2, "was never closed"),
        ("nonlocal x", 1, "no binding for nonlocal 'x'"),
        ("x = 1\nglobal x", 2, "assigned to before global declaration"),
    ],
)
def test_compile_errors_name_their_line(
    workspace: Workspace, action: str, line: int, message: str
) -> None:
    with pytest.raises(ActionSyntaxError, match=message) as refused:
        workspace.check_sources(action, "")
    assert (refused.value.field, refused.value.line) == ("action", line)
    with pytest.raises(ActionSyntaxError):
        workspace.create("a", "x", label="X", method="GET", resource="x", action=action)
    assert workspace.applications() == []

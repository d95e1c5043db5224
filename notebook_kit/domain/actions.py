"""Compiling actions.

An action's source is the body of a function ``(req, res)``; ``const``, ``fn``, ``db`` and
the user functions are globals of the definition's own namespace. ``prepare_action``
compiles the source to code objects and runs nothing; ``ActionCode.load`` runs the user
functions' top level and turns the action into that function once, so a call only makes
``req`` and ``res`` and calls it. An action that uses ``await`` at its top level becomes a
coroutine function and is awaited. Only sandboxed processes load an action (and the HTTP
workers, themselves sandboxed, the few they run inline): see ``notebook_kit.sandbox``.
"""

from __future__ import annotations

import ast
import builtins
import linecache
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import CodeType, SimpleNamespace
from typing import TYPE_CHECKING, Any

from ..errors import ActionSyntaxError, ValidationError
from .models import Definition

if TYPE_CHECKING:  # the request and response types: the CLI compiles without loading them
    from .messages import ActionRequest, ActionResponse

__all__ = ["ActionCode", "CompiledAction", "check_sources", "compile_action", "prepare_action"]

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_FLAGS = ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
# Function nodes have type_params from Python 3.12 on; 3.11 has no such field.
_NO_TYPE_PARAMS: dict[str, Any] = {"type_params": []} if sys.version_info >= (3, 12) else {}


def _wrap_as_function(tree: ast.Module, filename: str) -> tuple[ast.Module, bool]:
    """Turn a module's statements into ``def __action__(req, res): <statements>``."""
    is_async = False
    stack: list[ast.AST] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Await, ast.AsyncFor, ast.AsyncWith)):
            is_async = True
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            raise ActionSyntaxError(
                f"{filename} line {node.lineno}: an action cannot 'yield'; set res.body",
                field="action",
                line=node.lineno,
            )
        if not isinstance(node, _SCOPES):
            stack.extend(ast.iter_child_nodes(node))
    args = ast.arguments(
        posonlyargs=[],
        args=[ast.arg("req"), ast.arg("res")],
        vararg=None,
        kwonlyargs=[],
        kw_defaults=[],
        kwarg=None,
        defaults=[],
    )
    kind = ast.AsyncFunctionDef if is_async else ast.FunctionDef
    function = kind(
        name="__action__",
        args=args,
        body=tree.body or [ast.Pass()],
        decorator_list=[],
        returns=None,
        **_NO_TYPE_PARAMS,
    )
    module = ast.Module(body=[function], type_ignores=[])
    return ast.fix_missing_locations(module), is_async


def _parse(source: str, filename: str, field_name: str, flags: int) -> ast.Module:
    # Register the source so tracebacks from the action show its lines.
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    try:
        module: ast.Module = compile(source, filename, "exec", flags=flags)
        return module
    except SyntaxError as exc:
        line = exc.lineno
        where = f" line {line}" if line else ""
        raise ActionSyntaxError(
            f"{field_name}{where}: {exc.msg}", field=field_name, line=line
        ) from None
    except ValueError as exc:  # e.g. NUL bytes
        raise ActionSyntaxError(f"{field_name}: {exc}", field=field_name, line=None) from None


def check_sources(action: str, functions: str) -> None:
    """Refuse an action or user functions that do not compile, naming the line."""
    _parse(functions, "functions", "functions", ast.PyCF_ONLY_AST)
    tree = _parse(action, "action", "action", _FLAGS)
    module, _ = _wrap_as_function(tree, "action")
    try:  # what only the compiler sees: a nonlocal without binding, a late global ...
        compile(module, "action", "exec")
    except SyntaxError as exc:
        where = f" line {exc.lineno}" if exc.lineno else ""
        raise ActionSyntaxError(
            f"action{where}: {exc.msg}", field="action", line=exc.lineno
        ) from None


@dataclass(frozen=True, slots=True)
class CompiledAction:
    """A definition made runnable: call ``run(req, res)`` (await it if ``is_async``)."""

    definition: Definition
    run: Callable[[ActionRequest, ActionResponse], Any]
    is_async: bool
    content_type: str | None = field(init=False)
    ident: tuple[str, str] = field(init=False)  # (app, API ID): a cheap key for counters

    def __post_init__(self) -> None:
        object.__setattr__(self, "content_type", self.definition.content_type)
        object.__setattr__(self, "ident", (self.definition.app, self.definition.id))


@dataclass(frozen=True, slots=True)
class ActionCode:
    """A definition compiled to code objects, none of it run yet (a worker keeps its
    actions so until one first runs inline: see ``runtime/serve/dispatch.py``).
    ``names`` is every global and attribute name the action or its user functions read:
    what decides, without running anything, whether it may ever run inline."""

    definition: Definition
    functions: CodeType
    action: CodeType
    is_async: bool
    names: frozenset[str]

    def load(self, env: Mapping[str, Any]) -> CompiledAction:
        """Build the definition's namespace (``env`` names such as ``fn`` and ``db``, its
        ``const``, its user functions: their top-level code runs here) and make the
        action's function. ``ValidationError`` when the user functions fail to load."""
        definition = self.definition
        namespace: dict[str, Any] = {
            "__name__": f"notebook_kit.action.{definition.app}.{definition.id}",
            "__builtins__": builtins,
            **env,
            "const": SimpleNamespace(**{c.name: c.value for c in definition.constants}),
        }
        try:
            exec(self.functions, namespace)
        except Exception as exc:
            raise ValidationError(
                f"user functions of {definition.app}/{definition.id} fail to load: "
                f"{type(exc).__name__}: {exc}",
                field="functions",
            ) from None
        exec(self.action, namespace)
        return CompiledAction(definition, namespace.pop("__action__"), self.is_async)


def _names_read(code: CodeType) -> frozenset[str]:
    names: set[str] = set()
    todo = [code]
    while todo:
        item = todo.pop()
        names.update(item.co_names)
        todo.extend(c for c in item.co_consts if isinstance(c, CodeType))
    return frozenset(names)


def prepare_action(definition: Definition) -> ActionCode:
    """Compile the definition's action and user functions without running either
    (``ActionSyntaxError`` naming the line when one does not compile)."""
    name = f"{definition.app}/{definition.id}"
    functions_tree = _parse(
        definition.functions, f"<functions {name}>", "functions", ast.PyCF_ONLY_AST
    )
    functions = compile(functions_tree, f"<functions {name}>", "exec")
    tree = _parse(definition.action, f"<action {name}>", "action", _FLAGS)
    module, is_async = _wrap_as_function(tree, f"<action {name}>")
    action = compile(module, f"<action {name}>", "exec")
    return ActionCode(
        definition, functions, action, is_async, _names_read(functions) | _names_read(action)
    )


def compile_action(definition: Definition, env: Mapping[str, Any]) -> CompiledAction:
    """``prepare_action(definition).load(env)``: the action made runnable, its user
    functions' top-level code run (so a definition that fails to load is refused here,
    at deploy, rather than on a request)."""
    return prepare_action(definition).load(env)

"""The one exception tree of notebook_kit.

Every refusal the core makes is one of these, with a message a person can act on.
Faces translate them, and only there: the CLI prints one line on stderr and exits 1,
the widgets show a status line, the runtime maps them to an HTTP status. No HTTP
status codes live here.

    NotebookKitError
    ├── ValidationError        bad input: an ID, a resource, a constant, a setting ...
    │   ├── ActionSyntaxError  an action or its user functions do not compile (has .line)
    │   └── FormatError        an import file that is malformed, truncated or of the wrong type
    ├── NotFoundError          no such application, definition, deployment or stage snapshot
    ├── ConflictError          the change collides with what exists
    │   ├── QuotaExceededError a deploy would push a stage past its resource quota
    │   └── ExampleFailedError a deploy refused because an example of the app fails
    ├── StoreError             the workspace store failed (wraps sqlite3 and psycopg errors)
    ├── ServerError            a server could not start or stop (a busy port, a bad host ...)
    ├── SandboxError           a sandboxed action process could not be started or confined
    ├── SecretKeyError         the secrets key is missing, malformed or not the one in use
    └── BuiltinError           a built-in function (fn.*) used from an action failed
"""

from __future__ import annotations

__all__ = [
    "ActionSyntaxError",
    "BuiltinError",
    "ConflictError",
    "ExampleFailedError",
    "FormatError",
    "NotFoundError",
    "NotebookKitError",
    "QuotaExceededError",
    "SandboxError",
    "SecretKeyError",
    "ServerError",
    "StoreError",
    "ValidationError",
]


class NotebookKitError(Exception):
    """Base of every error notebook_kit raises on purpose."""


class ValidationError(NotebookKitError):
    """Input that breaks a rule. ``field`` names the input at fault, when there is one."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class ActionSyntaxError(ValidationError):
    """Action source (or user functions) that does not compile. ``line`` is 1-based."""

    def __init__(self, message: str, *, field: str, line: int | None) -> None:
        super().__init__(message, field=field)
        self.line = line


class FormatError(ValidationError):
    """An export document that cannot be imported."""


class NotFoundError(NotebookKitError):
    """The named thing does not exist."""


class ConflictError(NotebookKitError):
    """The change collides with existing state (a duplicate ID, two definitions on one route...)."""


class QuotaExceededError(ConflictError):
    """A deploy would push a stage's resource count past the configured quota."""


class ExampleFailedError(ConflictError):
    """A deploy refused, nothing changed, because examples of the application fail on
    the snapshot it would publish. ``report`` is the ``CheckReport`` (domain.checks)."""

    def __init__(self, message: str, report: object) -> None:
        super().__init__(message)
        self.report = report


class StoreError(NotebookKitError):
    """The workspace store could not do what was asked."""


class ServerError(NotebookKitError, OSError):
    """A server (in a background thread or a child process) could not start or stop. An
    ``OSError`` too, as a busy port has always been."""


class SandboxError(NotebookKitError):
    """A sandboxed process (where action code runs) could not be started, confined or
    reached: the kernel refused the rules, the workspace lies where the sandbox must
    read, the process died before it answered."""


class BuiltinError(NotebookKitError):
    """A built-in function (``fn.*``) called by an action failed; the message says why."""


class SecretKeyError(NotebookKitError):
    """The key that encrypts secrets is missing, malformed, or not the key the stored
    secrets were encrypted with (the message says where it was looked for)."""

"""The built-ins that need the trusted side: a narrow interface, and its trusted half.

Most of ``fn`` works on what an action's process may touch (files, the environment
database, outside HTTP). A few need what only the trusted side holds: the store (users
and groups, the deployed actions' counters), a secret (the presign key, the SMTP
password, the OAuth2 client secret). In a sandboxed process those are requests over a
channel (``sandbox.inside.service_link``); here is what the trusted side answers.

``Services`` is the whole surface: an action can ask for exactly these, with arguments
checked by the same code as before, and gets back what the built-in returns, nothing
more: never a key, a password hash, a secret or a store handle. ``answer`` is the
trusted side's dispatch of one request ``{"op": ..., "args": [...]}``; ``LocalServices``
is the implementation over a store.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from ..domain.models import Stage
from ..errors import BuiltinError, NotebookKitError
from . import presign

if TYPE_CHECKING:  # the store's code stays out of sandboxed processes, which import this
    from ..store.store import Store
    from .users import UserDirectory

__all__ = ["USER_CALLS", "LocalServices", "Services", "answer"]

#: The user-directory built-ins (``fn.<name>``) and the ``UserDirectory`` method of each.
USER_CALLS = {
    "getUsers": "get_users",
    "createUser": "create_user",
    "updateUser": "update_user",
    "deleteUser": "delete_user",
    "resetPassword": "reset_password",
    "verifyPassword": "verify_password",
    "getGroups": "get_groups",
    "createGroup": "create_group",
    "deleteGroup": "delete_group",
    "addUsers": "add_users",
    "removeUsers": "remove_users",
    "listUsersByEmail": "by_email",
    "listUsersByName": "by_name",
}


class Services(Protocol):
    """What ``fn`` asks of the trusted side (see the module docstring)."""

    def users(self, name: str, args: list[Any]) -> Any: ...

    def send_mail(self, param: dict[str, Any]) -> dict[str, Any]: ...

    def presign(self, method: str, path: str, expires_in: int, base: str | None) -> str: ...

    def check_link(
        self, method: str, path: str, expires: str | None, signature: str | None
    ) -> str | None: ...

    def actions_status(self) -> dict[str, list[dict[str, Any]]]: ...

    def oauth2(self, name: str) -> Any: ...


class LocalServices:
    """``Services`` over the store and the settings in force (a callable)."""

    def __init__(self, store: Store, settings: Callable[[], Mapping[str, Any]]) -> None:
        self.store = store
        self.settings = settings

    def notify(self, to: str, subject: str, text: str) -> bool:
        """Mail ``text`` to ``to`` when SMTP is configured; False when it is not."""
        from .mail import SmtpConfig, send_mail  # each built-in's module on first use

        config = SmtpConfig.from_settings(self.settings())
        if not config.configured:
            return False
        send_mail({"to": to, "subject": subject, "text": text}, config)
        return True

    def directory(self) -> UserDirectory:
        from .users import UserDirectory

        return UserDirectory(self.store, self.notify)

    def users(self, name: str, args: list[Any]) -> Any:
        method = USER_CALLS.get(name)
        if method is None:
            raise BuiltinError(f"no user built-in {name!r}")
        return getattr(self.directory(), method)(*args)

    def send_mail(self, param: dict[str, Any]) -> dict[str, Any]:
        from .mail import SmtpConfig, send_mail

        return send_mail(param, SmtpConfig.from_settings(self.settings()))

    def presign(self, method: str, path: str, expires_in: int, base: str | None) -> str:
        settings = self.settings()
        secret = presign.workspace_secret(self.store, settings.get("presign_secret"))
        root = (settings.get("public_base_url") or base or "").rstrip("/")
        if not root:
            raise BuiltinError(
                "getPresignedUrl: no base URL for the link: set the public_base_url "
                "setting, or call this from an action the runtime is serving"
            )
        expires_in = min(expires_in, int(settings["presign_max_expires"]))
        return presign.presigned_url(root, secret, method, path, expires_in)

    def check_link(
        self, method: str, path: str, expires: str | None, signature: str | None
    ) -> str | None:
        secret = presign.workspace_secret(self.store, self.settings().get("presign_secret"))
        return presign.check_signature(secret, method, path, expires, signature)

    def actions_status(self) -> dict[str, list[dict[str, Any]]]:
        stats = self.store.action_stats()
        found: dict[str, list[dict[str, Any]]] = {str(s): [] for s in Stage}
        for stage, app, deployment_id, snapshot in self.store.live_snapshots():
            for d in snapshot["definitions"]:
                counts = stats.get((str(stage), app, d["id"]), {})
                found[str(stage)].append(
                    {
                        "app": app,
                        "id": d["id"],
                        "label": d["label"],
                        "method": d["method"],
                        "resource": d["resource"],
                        "deploymentId": deployment_id,
                        "requests": counts.get("requests", 0),
                        "errors": counts.get("errors", 0),
                        "timeouts": counts.get("timeouts", 0),
                        "lastStatus": counts.get("lastStatus"),
                        "lastRequestAt": counts.get("lastRequestAt"),
                        "lastError": counts.get("lastError"),
                        "lastErrorAt": counts.get("lastErrorAt"),
                    }
                )
        return found

    def oauth2(self, name: str) -> Any:
        from .oauth2 import OAuth2Client

        settings = self.settings
        client = OAuth2Client(
            lambda: {k: v for k, v in settings().items() if k.startswith("oauth2_")}
        )
        if name == "token":
            return client.token()
        if name == "revoke":
            return client.revoke()
        raise BuiltinError(f"no oauth2 built-in {name!r}")


_OPS: dict[str, Callable[..., Any]] = {
    "users": lambda s, name, args: s.users(str(name), list(args)),
    "send_mail": lambda s, param: s.send_mail(dict(param)),
    "presign": lambda s, method, path, expires_in, base: s.presign(
        str(method), str(path), int(expires_in), None if base is None else str(base)
    ),
    "check_link": lambda s, method, path, expires, signature: s.check_link(
        str(method), str(path), expires, signature
    ),
    "actions_status": lambda s: s.actions_status(),
    "oauth2": lambda s, name: s.oauth2(str(name)),
}


def answer(services: Services, request: Mapping[str, Any]) -> dict[str, Any]:
    """The reply to one request from a sandboxed process: ``{"ok": value}``, or
    ``{"error": message}`` for a refusal (a built-in error, bad arguments, an unknown
    operation). Never raises for what the request holds."""
    op = _OPS.get(str(request.get("op")))
    args = request.get("args")
    if op is None or not isinstance(args, list):
        return {"error": f"no such service {request.get('op')!r}"}
    try:
        return {"ok": op(services, *args)}
    except NotebookKitError as exc:
        return {"error": str(exc), "kind": type(exc).__name__}
    except (TypeError, ValueError) as exc:
        return {"error": f"{request.get('op')}: {exc}"}

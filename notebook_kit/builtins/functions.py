"""``fn``: the built-in functions an action calls as ``fn.<name>(...)``.

Each built-in is a method of ``Functions`` named as the spec names it. A function that
fails raises ``BuiltinError`` with a message saying why; an action that does not catch it
gets the runtime's 500 answer.
"""

from __future__ import annotations

import asyncio
import csv
import io
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ..errors import BuiltinError, NotebookKitError
from . import presign
from .artifacts import ArtifactFunctions
from .storage import LocalFileStorage, default_content_type, is_text_type, resolve_root

if TYPE_CHECKING:
    from .context import BuiltinContext
    from .services import Services

__all__ = ["ActionsFunctions", "Functions", "OAuth2Functions", "VendorFunctions"]


@contextmanager
def _as_builtin_error(name: str) -> Iterator[None]:
    """Domain and OS errors of a built-in become one BuiltinError naming the function."""
    try:
        yield
    except BuiltinError:
        raise
    except NotebookKitError as exc:
        raise BuiltinError(f"{name}: {exc}") from None
    except OSError as exc:
        raise BuiltinError(f"{name}: {exc.strerror or exc}") from None


def _options(name: str, given: Any, allowed: set[str]) -> dict[str, Any]:
    if given is None:
        return {}
    if not isinstance(given, Mapping):
        raise BuiltinError(f"{name}: options are a dict, not {type(given).__name__}")
    unknown = sorted(set(given) - allowed)
    if unknown:
        raise BuiltinError(f"{name}: unknown option {unknown[0]!r}; known: {sorted(allowed)}")
    return dict(given)


def _need_context(fn: Functions, name: str) -> BuiltinContext:
    context = fn._context
    if context is None:
        raise BuiltinError(f"{name} needs a workspace (fn was built without one)")
    return context


def _setting(fn: Functions, name: str) -> Any:
    return _need_context(fn, "this built-in").setting(name)


def _file_storage(fn: Functions) -> LocalFileStorage:
    context = _need_context(fn, "the file storage")
    with _as_builtin_error("file storage"):
        root = resolve_root(context.home, context.setting("files_root"))
        if fn._files is None or fn._files.root != root:
            fn._files = LocalFileStorage(root)
    return fn._files


def _service(fn: Functions, name: str) -> Services:
    return _need_context(fn, name).services


class ActionsFunctions:
    """``fn.notebook_kit.actions``."""

    def __init__(self, functions: Functions) -> None:
        self._functions = functions

    def __repr__(self) -> str:
        return "<fn.notebook_kit.actions: status>"

    def status(self) -> dict[str, list[dict[str, Any]]]:
        """The deployed actions per stage (``{"dev": [...], "prod": [...]}``), each as
        ``{"app", "id", "label", "method", "resource", "deploymentId", "requests",
        "errors", "timeouts", "lastStatus", "lastRequestAt", "lastError", "lastErrorAt"}``.

        Counts cover the calls that reached the action; ``errors`` counts those where the
        action raised (the caller got the runtime's 500), ``timeouts`` those that ran past
        their time limit (a 504), and ``lastError`` says what happened last. Servers write
        the counts every reload interval, so they lag by that much.
        """
        services = _service(self._functions, "actions.status")
        with _as_builtin_error("actions.status"):
            return services.actions_status()


class OAuth2Functions:
    """``fn.notebook_kit.oauth2``: the client-credentials token of the configured OAuth2
    client (the trusted side holds the client secret and caches the token)."""

    def __init__(self, functions: Functions) -> None:
        self._functions = functions

    def token(self) -> str:
        """The access token, fetched only when the cached one is missing or about to
        expire. Raises BuiltinError if the endpoint refuses or oauth2 is not set up."""
        return str(_service(self._functions, "oauth2").oauth2("token"))

    async def atoken(self) -> str:
        """``token()`` for actions that use ``await``: a fetch does not block the loop."""
        return await asyncio.to_thread(self.token)

    def revoke(self) -> bool:
        """Revoke the cached token and forget it; whether there was one to revoke."""
        return bool(_service(self._functions, "oauth2").oauth2("revoke"))

    async def arevoke(self) -> bool:
        """``revoke()`` for actions that use ``await``."""
        return await asyncio.to_thread(self.revoke)

    def __repr__(self) -> str:
        return "<fn.notebook_kit.oauth2: token(), revoke()>"


class VendorFunctions:
    """``fn.notebook_kit``: the built-ins the spec files under ``<vendor>``."""

    def __init__(self, functions: Functions) -> None:
        self.oauth2 = OAuth2Functions(functions)
        self.artifacts = ArtifactFunctions(
            lambda: _file_storage(functions),
            lambda: _setting(functions, "max_file_bytes"),
            functions.getPresignedUrl,
        )
        self.actions = ActionsFunctions(functions)

    def __repr__(self) -> str:
        names = sorted(n for n in vars(self) if not n.startswith("_"))
        return f"<fn.notebook_kit: {', '.join(names)}>"


class Functions:
    """The ``fn`` namespace. One instance per worker, shared by every action.

    ``context`` gives the built-ins that need one (users, mail, files, settings) the
    workspace directory, the settings and the trusted side's services; without it they
    raise BuiltinError.
    """

    #: What every built-in raises; an action catches it as ``except fn.BuiltinError``.
    BuiltinError = BuiltinError

    def __init__(self, context: BuiltinContext | None = None) -> None:
        self._context = context
        self._files: LocalFileStorage | None = None
        self.notebook_kit = VendorFunctions(self)

    # -- files ---------------------------------------------------------------------------

    def getFile(self, path: str) -> dict[str, Any]:
        """Read a file: ``{"path", "content", "contentType", "size", "modified"}``.

        ``content`` is ``str`` for text types (text/*, JSON, XML...) stored as UTF-8, else
        ``bytes``; ``modified`` is ISO 8601 UTC. A missing file raises BuiltinError.
        """
        with _as_builtin_error("getFile"):
            stored = _file_storage(self).read(path)
        info, content = stored.info, stored.data
        text: str | bytes = content
        if is_text_type(info.content_type):
            try:
                text = content.decode("utf-8")
            except UnicodeDecodeError:
                text = content
        return {
            "path": info.path,
            "content": text,
            "contentType": info.content_type,
            "size": info.size,
            "modified": info.modified,
        }

    def getFileNames(self, path: str = "") -> list[str]:
        """Names in a folder (``""`` is the root), sorted; sub-folders end with ``/``."""
        with _as_builtin_error("getFileNames"):
            return _file_storage(self).list(path)

    def putFile(self, path: str, parameters: Mapping[str, Any]) -> dict[str, Any]:
        """Write a file atomically; missing folders are created.

        ``parameters``: ``content`` (str, stored as UTF-8, or bytes; required),
        ``contentType`` (default: from the extension, else text/plain for str and
        application/octet-stream for bytes), ``overwrite`` (default True; False refuses an
        existing file). Returns ``{"path", "contentType", "size", "modified"}``.
        """
        given = _options("putFile", parameters, {"content", "contentType", "overwrite"})
        content = given.get("content")
        if isinstance(content, str):
            data = content.encode("utf-8")
        elif isinstance(content, (bytes, bytearray, memoryview)):
            data = bytes(content)
        else:
            raise BuiltinError("putFile: parameters.content is required: str or bytes")
        content_type = given.get("contentType") or default_content_type(
            str(path), content if isinstance(content, str) else data
        )
        if (
            not isinstance(content_type, str)
            or "/" not in content_type
            or any(c in content_type for c in "\r\n\x00")
        ):
            raise BuiltinError(f"putFile: contentType {content_type!r} is not a media type")
        overwrite = given.get("overwrite", True)
        if not isinstance(overwrite, bool):
            raise BuiltinError("putFile: parameters.overwrite is true or false")
        limit = _setting(self, "max_file_bytes")
        if len(data) > limit:
            raise BuiltinError(
                f"putFile: the content is {len(data)} bytes; the limit (max_file_bytes) is {limit}"
            )
        with _as_builtin_error("putFile"):
            info = _file_storage(self).write(path, data, content_type, overwrite=overwrite)
        return {
            "path": info.path,
            "contentType": info.content_type,
            "size": info.size,
            "modified": info.modified,
        }

    def deleteFile(self, path: str) -> None:
        """Delete a file (and folders it leaves empty). A missing file raises BuiltinError."""
        with _as_builtin_error("deleteFile"):
            _file_storage(self).delete(path)

    def getPresignedUrl(self, path: str, options: Mapping[str, Any] | None = None) -> str:
        """A URL on the runtime server that lets anyone holding it GET (or, with
        ``{"method": "PUT"}``, upload) this one file until it expires.

        ``options``: ``method`` ("GET" or "PUT"; default "GET"), ``expiresIn`` (seconds,
        default 3600, capped at the presign_max_expires setting). The base is the
        public_base_url setting, else the scheme and host of the request being answered.
        A GET link needs the file to exist.
        """
        given = _options("getPresignedUrl", options, {"method", "expiresIn"})
        method = given.get("method", "GET")
        if not isinstance(method, str) or method.upper() not in presign.METHODS:
            raise BuiltinError(f"getPresignedUrl: method is GET or PUT, not {method!r}")
        expires_in = given.get("expiresIn", presign.DEFAULT_EXPIRES_IN)
        if isinstance(expires_in, bool) or not isinstance(expires_in, int) or expires_in <= 0:
            raise BuiltinError(
                f"getPresignedUrl: expiresIn is a positive whole number of seconds, "
                f"not {expires_in!r}"
            )
        services = _service(self, "getPresignedUrl")
        with _as_builtin_error("getPresignedUrl"):
            storage = _file_storage(self)
            is_get = method.upper() == "GET"
            clean = storage.stat(path).path if is_get else storage.check(path)
            return services.presign(method.upper(), clean, expires_in, presign.current_origin())

    def csvToObject(self, csv_text: str) -> list[dict[str, Any]]:
        """Parse CSV text into a list of dicts; the header row gives the keys.

        Quoted fields, embedded newlines and a leading byte-order mark are handled; bytes
        must be UTF-8. A row shorter than the header gets ``None`` for the missing fields;
        a longer one keeps the extra values as a list under the key ``"_extra"``.
        """
        if isinstance(csv_text, bytes):
            try:
                csv_text = csv_text.decode("utf-8-sig")
            except UnicodeDecodeError as exc:
                raise BuiltinError(f"csvToObject: the bytes are not UTF-8 ({exc})") from None
        if not isinstance(csv_text, str):
            raise BuiltinError(f"csvToObject needs CSV text, not {type(csv_text).__name__}")
        try:
            text = io.StringIO(csv_text.removeprefix("\ufeff"), newline="")
            reader = csv.DictReader(text, restkey="_extra")
            return [dict(row) for row in reader]
        except csv.Error as exc:
            raise BuiltinError(f"csvToObject: the CSV is malformed ({exc})") from None

    # -- users and groups (users.py): paged answers {"users"|"groups", "total", ...} ----

    def getUsers(self, groupName: str | None = None, option: dict | None = None) -> dict:
        """Users (of ``groupName`` if given), ordered by email, paged by
        ``option={"offset", "limit"}``: ``{"users": [...], "total", "offset", "limit"}``."""
        return _service(self, "getUsers").users("getUsers", [groupName, option])

    def createUser(self, param: dict) -> dict:
        """Create a user from ``{"email", "name"?, "password"?, "groups"?, "attributes"?}``;
        returns the user (never its password). An email already used (any case) is refused."""
        return _service(self, "createUser").users("createUser", [param])

    def updateUser(self, param: dict) -> dict:
        """Change the user ``param["email"]``: ``name``, ``password``, ``attributes``,
        ``newEmail`` as given; returns the user."""
        return _service(self, "updateUser").users("updateUser", [param])

    def deleteUser(self, email: str) -> dict:
        """Delete a user, its group memberships and reset tokens in one transaction."""
        return _service(self, "deleteUser").users("deleteUser", [email])

    def resetPassword(self, param: dict) -> dict:
        """``{"email"}`` issues a one-time reset token valid ``expiresIn`` seconds (default
        3600) and mails it when SMTP is configured (``subject``/``text`` may override the
        mail; ``{token}`` marks where it goes); without SMTP the answer carries ``token``.
        ``{"email", "token", "password"}`` uses the token to set a new password."""
        return _service(self, "resetPassword").users("resetPassword", [param])

    def verifyPassword(self, email: str, password: str) -> bool:
        """Whether ``password`` is the user's password (False for an unknown user)."""
        return _service(self, "verifyPassword").users("verifyPassword", [email, password])

    def getGroups(self, option: dict | None = None) -> dict:
        """Groups by name with ``userCount``, paged: ``{"groups": [...], "total", ...}``."""
        return _service(self, "getGroups").users("getGroups", [option])

    def createGroup(self, param: dict) -> dict:
        """Create a group from ``{"name", "description"?}``; names are 1-64 of
        letters, digits, '_', '.', '-'."""
        return _service(self, "createGroup").users("createGroup", [param])

    def deleteGroup(self, name: str) -> dict:
        """Delete a group (its users stay)."""
        return _service(self, "deleteGroup").users("deleteGroup", [name])

    def addUsers(self, param: dict) -> dict:
        """Add ``{"groupName", "emails": [...]}`` to the group; all or nothing. Returns
        ``{"groupName", "added": [emails not already members]}``."""
        return _service(self, "addUsers").users("addUsers", [param])

    def removeUsers(self, param: dict) -> dict:
        """Remove ``{"groupName", "emails": [...]}`` from the group; returns
        ``{"groupName", "removed": [emails that were members]}``."""
        return _service(self, "removeUsers").users("removeUsers", [param])

    def listUsersByEmail(self, email: str, option: dict | None = None) -> dict:
        """Users whose email starts with ``email`` (case-insensitive prefix), paged."""
        return _service(self, "listUsersByEmail").users("listUsersByEmail", [email, option])

    def listUsersByName(self, name: str, option: dict | None = None) -> dict:
        """Users whose name contains ``name`` (case-insensitive substring), paged."""
        return _service(self, "listUsersByName").users("listUsersByName", [name, option])

    # -- mail (mail.py) ----------------------------------------------------------------

    def sendMail(self, param: dict) -> dict:
        """Send a mail: ``{"to", "cc"?, "bcc"?, "from"?, "replyTo"?, "subject", "text"?,
        "html"?, "attachments"?: [{"path"} | {"filename", "content", "contentType"}]}``
        through the configured SMTP server. Returns ``{"messageId", "from",
        "recipients", "refused"}``."""
        services = _service(self, "sendMail")
        if isinstance(param, Mapping) and isinstance(param.get("attachments"), list):
            attachments = [self._inline(item) for item in param["attachments"]]
            param = {**param, "attachments": attachments}
        return services.send_mail(param)

    def _inline(self, item: Any) -> Any:
        """An attachment named by ``path``, read here (the trusted side reads no file for
        an action) and handed over as content."""
        if not isinstance(item, Mapping) or "path" not in item:
            return item
        path = item["path"]
        if not isinstance(path, str):
            raise BuiltinError("sendMail: attachment path must be text")
        with _as_builtin_error("sendMail attachment"):
            stored = _file_storage(self).read(path)
        return {
            "filename": item.get("filename") or path.rsplit("/", 1)[-1],
            "content": stored.data,
            "contentType": item.get("contentType") or stored.info.content_type,
        }

    def __repr__(self) -> str:
        names = sorted(n for n in dir(self) if not n.startswith("_"))
        return f"<fn: {', '.join(names)}>"

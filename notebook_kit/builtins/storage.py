"""The execution environment's file storage: what ``fn.getFile`` and friends read and write.

``FileStorage`` is the small interface every backend offers; ``LocalFileStorage`` keeps
files in a folder (``<home>/files`` unless the ``files_root`` setting says otherwise). A
backend over fsspec (S3 and friends) only has to offer the same five methods.

Paths are relative and ``/``-separated. ``check_path`` refuses what could escape the root:
absolute paths, ``..``, empty or ``.`` segments, backslashes, NUL bytes. The local backend
also refuses a path whose symlinks lead outside the root.

Metadata (the content type, plus free-form string metadata such as an artifact's name)
lives in a sidecar JSON file under ``<root>/.notebook_kit/`` (named by a hash of the path),
a folder no path can name.
Writes are atomic: content and sidecar go to temporary files in their target folders and
are moved into place with ``os.replace``, so a crash never leaves half a file.
"""

from __future__ import annotations

import hashlib
import json
import mimetypes
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from ..domain.clock import iso_time
from ..errors import ConflictError, NotFoundError, ValidationError

__all__ = [
    "FileInfo",
    "FileStorage",
    "LocalFileStorage",
    "StoredFile",
    "check_files_root",
    "check_path",
    "default_content_type",
    "is_text_type",
    "resolve_root",
]

META_DIR = ".notebook_kit"  # reserved: holds the sidecars, no user path may enter it
_MAX_PATH = 1024
_MAX_SEGMENT = 255
_TEXT_TYPES = {
    "application/json",
    "application/xml",
    "application/javascript",
    "application/x-ndjson",
    "application/yaml",
    "image/svg+xml",
}


@dataclass(frozen=True)
class FileInfo:
    """What storage knows about a file besides its bytes. ``modified`` is ISO 8601 UTC."""

    path: str
    content_type: str
    size: int
    modified: str
    metadata: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class StoredFile:
    info: FileInfo
    data: bytes


class FileStorage(Protocol):
    """A file store with content types. Errors: ``ValidationError`` (bad path),
    ``NotFoundError`` (no such file or folder), ``ConflictError`` (exists / wrong kind)."""

    def read(self, path: str) -> StoredFile: ...

    def stat(self, path: str) -> FileInfo: ...

    def write(
        self,
        path: str,
        data: bytes,
        content_type: str,
        *,
        overwrite: bool = True,
        metadata: Mapping[str, str] | None = None,
    ) -> FileInfo: ...

    def list(self, path: str = "") -> list[str]: ...

    def check(self, path: str) -> str:
        """``path`` made clean, or a ValidationError; nothing is read or written."""
        ...

    def delete(self, path: str) -> None: ...


def check_path(path: object, *, folder: bool = False) -> str:
    """``path`` as a clean relative path, or a ``ValidationError`` saying what is wrong.

    With ``folder``, the empty path (the root) is allowed and one trailing ``/`` is dropped.
    """
    if not isinstance(path, str):
        raise ValidationError(f"a file path is text, not {type(path).__name__}", field="path")
    if "\x00" in path:
        raise ValidationError("a file path cannot contain a NUL byte", field="path")
    if "\\" in path:
        raise ValidationError(
            f"file path {path!r} contains a backslash; separate folders with '/'", field="path"
        )
    if path.startswith("/"):
        raise ValidationError(
            f"file path {path!r} is absolute; paths are relative to the storage root",
            field="path",
        )
    if folder:
        if path in ("", "."):
            return ""
        path = path.removesuffix("/")
    if not path:
        raise ValidationError("a file path cannot be empty", field="path")
    if len(path.encode("utf-8", "surrogatepass")) > _MAX_PATH:
        raise ValidationError(f"file path is longer than {_MAX_PATH} bytes", field="path")
    for segment in path.split("/"):
        if segment in ("", ".", ".."):
            shown = segment or "an empty segment"
            raise ValidationError(
                f"file path {path!r} contains {shown!r}; use plain folder names", field="path"
            )
        if len(segment.encode("utf-8", "surrogatepass")) > _MAX_SEGMENT:
            raise ValidationError(f"a file name is longer than {_MAX_SEGMENT} bytes", field="path")
    if path.split("/", 1)[0] == META_DIR:
        raise ValidationError(f"the folder {META_DIR!r} is reserved", field="path")
    return path


def is_text_type(content_type: str) -> bool:
    """Whether content of this type is handed to actions as ``str`` (UTF-8)."""
    base = content_type.split(";", 1)[0].strip().lower()
    return (
        base.startswith("text/")
        or base in _TEXT_TYPES
        or base.endswith("+json")
        or base.endswith("+xml")
    )


def default_content_type(path: str, content: str | bytes) -> str:
    """The type a file gets when none is given: from its extension, else by content kind."""
    guessed, _ = mimetypes.guess_type(path, strict=False)
    if guessed:
        return guessed
    return "text/plain; charset=utf-8" if isinstance(content, str) else "application/octet-stream"


def resolve_root(home: Path, configured: str | None) -> Path:
    """The storage folder: ``configured`` (relative to ``home`` if relative), else
    ``home/files``. Refuses (ValidationError) a folder holding the workspace directory."""
    if not configured:
        return home / "files"
    root = Path(configured).expanduser()
    root = root if root.is_absolute() else home / root
    check_files_root(home, str(root))
    return root


def check_files_root(home: Path, configured: str) -> None:
    """Refuse a ``files_root`` that is the workspace directory or holds it: presigned
    links and ``fn.getFile`` would then serve the store (API keys, the presign secret)."""
    root = Path(configured).expanduser()
    real_root = os.path.realpath(root if root.is_absolute() else home / root)
    real_home = os.path.realpath(home)
    if real_home == real_root or real_home.startswith(real_root.rstrip(os.sep) + os.sep):
        raise ValidationError(
            f"files_root {configured!r} holds the workspace directory {str(home)!r} and "
            "would serve its store (API keys, secrets): choose a folder outside it, or "
            "one inside it such as <home>/files",
            field="files_root",
        )


def _write_atomically(target: Path, data: bytes) -> Path:
    """Write ``data`` to a temporary file beside ``target`` and return it (not yet moved)."""
    fd, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name[:50]}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        os.unlink(name)
        raise
    return Path(name)


def _private_dirs(folder: Path) -> None:
    """Create ``folder`` and any missing parent owner-only (``mkdir(parents=True)`` gives
    the parents it creates the default mode)."""
    if folder.is_dir():
        return
    missing = [folder, *(p for p in folder.parents if not p.exists())]
    for each in reversed(missing):
        each.mkdir(mode=0o700, exist_ok=True)


class LocalFileStorage:
    """Files in a local folder (created owner-only on first use)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        _private_dirs(self.root)
        self._real_root = Path(os.path.realpath(self.root))

    def __repr__(self) -> str:
        return f"LocalFileStorage({str(self.root)!r})"

    def _locate(self, path: str, *, folder: bool = False) -> tuple[str, Path]:
        clean = check_path(path, folder=folder)
        target = self.root / clean if clean else self.root
        real = Path(os.path.realpath(target))
        if real != self._real_root and self._real_root not in real.parents:
            raise ValidationError(
                f"file path {clean!r} leads outside the storage root (through a symlink)",
                field="path",
            )
        return clean, target

    def _sidecar(self, clean: str) -> Path:
        # Flat, hashed names: a file "a" and a folder "a.json" never share a sidecar path.
        digest = hashlib.sha256(clean.encode("utf-8", "surrogatepass")).hexdigest()
        return self.root / META_DIR / f"{digest}.json"

    def _meta(self, clean: str) -> dict[str, str]:
        try:
            loaded = json.loads(self._sidecar(clean).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return loaded if isinstance(loaded, dict) else {}

    def _info(self, clean: str, target: Path) -> FileInfo:
        try:
            status = target.stat()
        except FileNotFoundError:
            raise NotFoundError(f"no file {clean!r}") from None
        if not target.is_file():
            raise ConflictError(f"{clean!r} is a folder, not a file")
        meta = self._meta(clean)
        content_type = meta.pop("contentType", None) or default_content_type(clean, b"")
        return FileInfo(clean, content_type, status.st_size, iso_time(status.st_mtime), meta)

    def check(self, path: str) -> str:
        return self._locate(path)[0]

    def stat(self, path: str) -> FileInfo:
        return self._info(*self._locate(path))

    def read(self, path: str) -> StoredFile:
        """The file's content and info."""
        clean, target = self._locate(path)
        try:
            with open(target, "rb") as handle:
                status = os.fstat(handle.fileno())
                data = handle.read()
        except FileNotFoundError:
            raise NotFoundError(f"no file {clean!r}") from None
        except IsADirectoryError:
            raise ConflictError(f"{clean!r} is a folder, not a file") from None
        except OSError as exc:
            raise NotFoundError(f"cannot read {clean!r}: {exc.strerror or exc}") from None
        meta = self._meta(clean)
        content_type = meta.pop("contentType", None) or default_content_type(clean, b"")
        info = FileInfo(clean, content_type, len(data), iso_time(status.st_mtime), meta)
        return StoredFile(info, data)

    def write(
        self,
        path: str,
        data: bytes,
        content_type: str,
        *,
        overwrite: bool = True,
        metadata: Mapping[str, str] | None = None,
    ) -> FileInfo:
        clean, target = self._locate(path)
        for parent in reversed(Path(clean).parents[:-1]):
            if (self.root / parent).is_file():
                raise ConflictError(f"{str(parent)!r} is a file, so it cannot hold {clean!r}")
        if target.is_dir():
            raise ConflictError(f"{clean!r} is a folder; choose another file name")
        if not overwrite and target.exists():
            raise ConflictError(f"file {clean!r} already exists and overwrite is off")
        sidecar = self._sidecar(clean)
        _private_dirs(target.parent)
        sidecar.parent.mkdir(mode=0o700, exist_ok=True)
        meta = {**(metadata or {}), "contentType": content_type}
        content_tmp = _write_atomically(target, data)
        try:
            meta_tmp = _write_atomically(sidecar, json.dumps(meta).encode())
        except BaseException:
            content_tmp.unlink()
            raise
        try:
            os.replace(content_tmp, target)
            os.replace(meta_tmp, sidecar)
        finally:
            content_tmp.unlink(missing_ok=True)
            meta_tmp.unlink(missing_ok=True)
        return self._info(clean, target)

    def list(self, path: str = "") -> list[str]:
        """Names in a folder, sorted; sub-folders end with ``/``. The root always exists."""
        clean, target = self._locate(path, folder=True)
        if not target.exists():
            raise NotFoundError(f"no folder {clean!r}")
        if not target.is_dir():
            raise ConflictError(f"{clean!r} is a file, not a folder")
        names = []
        for entry in os.scandir(target):
            if not clean and entry.name == META_DIR:
                continue
            if entry.name.startswith(".") and entry.name.endswith(".tmp"):
                continue  # a write in progress
            names.append(entry.name + "/" if entry.is_dir() else entry.name)
        return sorted(names)

    def delete(self, path: str) -> None:
        """Remove a file and its metadata; folders left empty are removed too."""
        clean, target = self._locate(path)
        if target.is_dir() and not target.is_symlink():
            raise ConflictError(f"{clean!r} is a folder; delete the files in it")
        try:
            target.unlink()
        except FileNotFoundError:
            raise NotFoundError(f"no file {clean!r}") from None
        self._sidecar(clean).unlink(missing_ok=True)
        for parent in Path(clean).parents[:-1]:
            try:
                (self.root / parent).rmdir()
            except OSError:
                break

"""The local file storage: path rules, content types, atomic writes, listing, deleting."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from notebook_kit.builtins.storage import (
    META_DIR,
    FileStorage,
    LocalFileStorage,
    check_path,
    is_text_type,
    resolve_root,
)
from notebook_kit.errors import ConflictError, NotFoundError, ValidationError


@pytest.fixture
def storage(tmp_path: Path) -> LocalFileStorage:
    return LocalFileStorage(tmp_path / "files")


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("", "empty"),
        ("/etc/passwd", "absolute"),
        ("../secret", "'..'"),
        ("a/../../b", "'..'"),
        ("a/./b", "'.'"),
        ("a//b", "empty segment"),
        ("a\\b", "backslash"),
        ("a\x00b", "NUL"),
        (f"{META_DIR}/x.json", "reserved"),
        ("x" * 256, "longer than 255"),
        (42, "text"),
    ],
)
def test_check_path_refuses_unsafe_paths(path: object, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        check_path(path)


@pytest.mark.parametrize(
    ("path", "clean"),
    [("a.txt", "a.txt"), ("dir/sub/b.bin", "dir/sub/b.bin"), (".hidden", ".hidden")],
)
def test_check_path_accepts_relative_paths(path: str, clean: str) -> None:
    assert check_path(path) == clean


def test_local_storage_is_a_file_storage(storage: LocalFileStorage) -> None:
    backend: FileStorage = storage  # the protocol an fsspec backend would also meet
    assert backend.list() == []


def test_write_then_read_keeps_bytes_type_and_metadata(storage: LocalFileStorage) -> None:
    data = bytes(range(256))
    info = storage.write("d/blob", data, "application/x-thing", metadata={"filename": "b.bin"})
    stored = storage.read("d/blob")
    assert stored.data == data
    assert stored.info.content_type == "application/x-thing"
    assert stored.info.size == 256 == info.size
    assert stored.info.metadata == {"filename": "b.bin"}
    assert stored.info.modified.endswith("Z")


def test_write_refuses_existing_file_without_overwrite(storage: LocalFileStorage) -> None:
    storage.write("a.txt", b"first", "text/plain")
    with pytest.raises(ConflictError, match="already exists"):
        storage.write("a.txt", b"second", "text/plain", overwrite=False)
    assert storage.read("a.txt").data == b"first"


def test_write_leaves_no_temporary_files(storage: LocalFileStorage) -> None:
    storage.write("a/b.txt", b"x", "text/plain")
    storage.write("a/b.txt", b"y", "text/plain")
    leftovers = [n for _, _, files in os.walk(storage.root) for n in files if n.endswith(".tmp")]
    assert leftovers == []


def test_failed_write_keeps_the_old_content(
    storage: LocalFileStorage, monkeypatch: pytest.MonkeyPatch
) -> None:
    storage.write("a.txt", b"old", "text/plain")

    def crash(src: object, dst: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError):
        storage.write("a.txt", b"new content", "text/plain")
    monkeypatch.undo()
    assert storage.read("a.txt").data == b"old"
    assert sorted(os.listdir(storage.root)) == [META_DIR, "a.txt"]  # no temporary file left


def test_list_sorts_and_marks_folders(storage: LocalFileStorage) -> None:
    for name in ("b.txt", "a.txt", "sub/c.txt"):
        storage.write(name, b"x", "text/plain")
    assert storage.list() == ["a.txt", "b.txt", "sub/"]
    assert storage.list("sub") == ["c.txt"]
    assert storage.list("sub/") == ["c.txt"]


@pytest.mark.parametrize(("path", "error"), [("missing", NotFoundError), ("a.txt", ConflictError)])
def test_list_refuses_missing_folder_or_file(
    storage: LocalFileStorage, path: str, error: type[Exception]
) -> None:
    storage.write("a.txt", b"x", "text/plain")
    with pytest.raises(error):
        storage.list(path)


def test_delete_removes_file_metadata_and_empty_folders(storage: LocalFileStorage) -> None:
    storage.write("sub/deep/c.txt", b"x", "text/plain")
    storage.delete("sub/deep/c.txt")
    assert storage.list() == []
    assert list((storage.root / META_DIR).iterdir()) == []
    with pytest.raises(NotFoundError):
        storage.read("sub/deep/c.txt")


def test_delete_refuses_missing_file_and_folder(storage: LocalFileStorage) -> None:
    storage.write("sub/c.txt", b"x", "text/plain")
    with pytest.raises(NotFoundError):
        storage.delete("nope.txt")
    with pytest.raises(ConflictError, match="folder"):
        storage.delete("sub")


def test_write_refuses_file_used_as_folder(storage: LocalFileStorage) -> None:
    storage.write("a", b"x", "text/plain")
    with pytest.raises(ConflictError, match="is a file"):
        storage.write("a/b", b"y", "text/plain")


@pytest.mark.parametrize("operation", ["read", "write", "list", "delete"])
def test_symlink_out_of_root_is_refused(
    storage: LocalFileStorage, tmp_path: Path, operation: str
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    (storage.root / "link").symlink_to(outside)
    calls = {
        "read": lambda: storage.read("link/secret.txt"),
        "write": lambda: storage.write("link/new.txt", b"x", "text/plain"),
        "list": lambda: storage.list("link"),
        "delete": lambda: storage.delete("link/secret.txt"),
    }
    with pytest.raises(ValidationError, match="outside the storage root"):
        calls[operation]()
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


def test_symlink_inside_root_is_followed(storage: LocalFileStorage) -> None:
    storage.write("real/a.txt", b"x", "text/plain")
    (storage.root / "alias").symlink_to(storage.root / "real")
    assert storage.read("alias/a.txt").data == b"x"


@pytest.mark.parametrize(
    ("content_type", "text"),
    [
        ("text/plain", True),
        ("text/csv; charset=utf-8", True),
        ("application/json", True),
        ("application/vnd.api+json", True),
        ("application/pdf", False),
        ("image/png", False),
    ],
)
def test_is_text_type(content_type: str, text: bool) -> None:
    assert is_text_type(content_type) is text


def test_resolve_root_default_relative_and_absolute(tmp_path: Path) -> None:
    assert resolve_root(tmp_path, None) == tmp_path / "files"
    assert resolve_root(tmp_path, "shared") == tmp_path / "shared"
    assert resolve_root(tmp_path, "/srv/files") == Path("/srv/files")

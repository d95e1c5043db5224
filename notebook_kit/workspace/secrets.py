"""Secrets: setting, listing and deleting them, the key that encrypts them, and their
values for the trusted side that hands them to an application's action processes.

Values are encrypted with AES-256-GCM (``cryptography``) under a key that is never in
the store: ``NOTEBOOK_KIT_SECRETS_KEY`` (the key, base64), else the file
``NOTEBOOK_KIT_SECRETS_KEY_FILE``, else ``$XDG_CONFIG_HOME/notebook-kit/secrets.key``
(``~/.config/...``), made (0600, in a 0700 folder) by the first ``set``. A key file
inside the workspace folder is refused: a backup of the workspace would carry the key
beside what it opens. Each stored value records the id of its key (a digest of it),
so a wrong key is one clear error, not a garbled value. ``rotate_key`` encrypts every
stored version again under a new key, in one transaction, and then replaces the key
file. See docs/secrets.md.
"""

from __future__ import annotations

import base64
import hashlib
import os
import secrets as random
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..domain.models import Stage
from ..domain.secrets import (
    SecretInfo,
    SecretNotLiveWarning,
    check_secret_name,
    check_secret_value,
)
from ..errors import NotFoundError, SecretKeyError
from ..store.secrets import SecretRow
from ..store.store import Store

__all__ = ["KEY_ENV", "KEY_FILE_ENV", "SecretKeeper", "SecretsKey", "default_key_file"]

KEY_ENV = "NOTEBOOK_KIT_SECRETS_KEY"
KEY_FILE_ENV = "NOTEBOOK_KIT_SECRETS_KEY_FILE"
_AAD = b"notebook-kit secret v1"
_NONCE = 12


def default_key_file() -> Path:
    """Where the key file is when no variable says otherwise."""
    config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config).expanduser() / "notebook-kit" / "secrets.key"


def _decode_key(text: str, where: str) -> bytes:
    try:
        raw = base64.urlsafe_b64decode(text.strip() + "=" * (-len(text.strip()) % 4))
    except (ValueError, TypeError):
        raw = b""
    if len(raw) != 32:
        raise SecretKeyError(
            f"the secrets key in {where} is not 32 bytes in base64 (docs/secrets.md)"
        )
    return raw


def _encode_key(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode("ascii")


class SecretsKey:
    """One AES-256 key and where it came from (``where``: for messages)."""

    def __init__(self, raw: bytes, where: str) -> None:
        self._raw = raw
        self.where = where
        digest = hashlib.sha256(b"notebook-kit secrets key id\0" + raw).hexdigest()
        self.id = digest[:16]

    def __repr__(self) -> str:
        return f"<SecretsKey {self.id} from {self.where}>"

    def encrypt(self, value: str) -> str:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        nonce = os.urandom(_NONCE)
        sealed = AESGCM(self._raw).encrypt(nonce, value.encode("utf-8"), _AAD)
        return base64.b64encode(nonce + sealed).decode("ascii")

    def decrypt(self, row: SecretRow) -> str:
        from cryptography.exceptions import InvalidTag
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        if row.key_id != self.id:
            raise SecretKeyError(
                f"secret {row.name} of {row.app} ({row.stage}) was encrypted with key "
                f"{row.key_id}; the secrets key in force ({self.where}) is {self.id}: set "
                f"{KEY_ENV} or {KEY_FILE_ENV} to the key it was made with (docs/secrets.md)"
            )
        try:
            blob = base64.b64decode(row.value)
            return AESGCM(self._raw).decrypt(blob[:_NONCE], blob[_NONCE:], _AAD).decode()
        except (InvalidTag, ValueError):
            raise SecretKeyError(
                f"secret {row.name} of {row.app} ({row.stage}) does not decrypt with the "
                f"secrets key ({self.where}): the stored value is damaged"
            ) from None


def _key_file() -> Path:
    named = os.environ.get(KEY_FILE_ENV)
    return Path(named).expanduser() if named else default_key_file()


def load_key(home: Path, create: bool = False) -> SecretsKey:
    """The key in force (see the module docstring); with ``create``, a key file is made
    when there is none. SecretKeyError when there is no key (and ``create`` is false),
    or it is malformed, or the file lies inside the workspace ``home``."""
    text = os.environ.get(KEY_ENV)
    if text:
        return SecretsKey(_decode_key(text, f"${KEY_ENV}"), f"${KEY_ENV}")
    path = _key_file()
    resolved = path.resolve()
    if resolved.is_relative_to(home.resolve()):
        raise SecretKeyError(
            f"the secrets key file {path} is inside the workspace {home}: keep it outside "
            f"(a backup of the workspace would carry the key with the secrets)"
        )
    if not path.exists():
        if not create:
            raise SecretKeyError(
                f"no secrets key: set {KEY_ENV}, or restore the key file {path} (docs/secrets.md)"
            )
        return SecretsKey(_write_key_file(path, random.token_bytes(32)), str(path))
    try:
        return SecretsKey(_decode_key(path.read_text(encoding="ascii"), str(path)), str(path))
    except (OSError, UnicodeDecodeError) as exc:
        raise SecretKeyError(f"cannot read the secrets key file {path}: {exc}") from None


def _write_key_file(path: Path, raw: bytes, replace: bool = False) -> bytes:
    """Write ``raw`` to ``path`` owner-only (a new file, or with ``replace`` one written
    beside it and renamed over it)."""
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        target = path.with_name(path.name + ".new") if replace else path
        if replace:
            target.unlink(missing_ok=True)
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as out:
            out.write(_encode_key(raw) + "\n")
            out.flush()
            os.fsync(out.fileno())
        if replace:
            os.replace(target, path)
    except OSError as exc:
        raise SecretKeyError(f"cannot write the secrets key file {path}: {exc}") from None
    return raw


class SecretKeeper:
    """A workspace's secrets (see the module docstring): ``Workspace.set_secret`` and
    the rest call it; the server's supervisor and the runner read values through it."""

    def __init__(self, store: Store, home: Path, find_app: Callable[[str], Any]) -> None:
        self.store = store
        self.home = home
        self._find_app = find_app

    def key(self, create: bool = False) -> SecretsKey:
        """The key in force (SecretKeyError: none, or unusable)."""
        return load_key(self.home, create)

    def set(self, app: str, name: str, value: str, stage: Stage | str) -> SecretInfo:
        """Store a new version of secret ``name`` of ``app`` on ``stage``. Live servers
        keep the values they were deployed with: a ``SecretNotLiveWarning`` says so when
        ``app`` is live on ``stage``."""
        stage = Stage.parse(stage)
        app = self._find_app(app).id
        check_secret_name(name)
        check_secret_value(name, value)
        key = self.key(create=not self.store.secrets.key_ids())  # the first: make one
        self._check_key(key)
        sealed = key.encrypt(value)
        with self.store.transaction():
            version = self.store.secrets.add(app, stage, name, sealed, key.id)
            self.store.secrets.collect(app, stage)
            self.store.bump_generation()
        self._warn_if_live(app, stage, f"secret {name} set")
        found = next(r for r in self.store.secrets.current(app, stage) if r.id == version)
        return SecretInfo(app, name, str(stage), found.set_at, version)

    def delete(self, app: str, name: str, stage: Stage | str) -> None:
        """Delete secret ``name`` of ``app`` on ``stage`` (NotFoundError: none). What is
        live keeps it until the next deploy (a ``SecretNotLiveWarning`` says so)."""
        stage = Stage.parse(stage)
        app = self._find_app(app).id
        check_secret_name(name)
        with self.store.transaction():
            if not any(r.name == name for r in self.store.secrets.current(app, stage)):
                raise NotFoundError(f"{app} has no secret {name} on {stage}")
            held = next(iter(self.store.secrets.key_ids()), "")
            self.store.secrets.add(app, stage, name, None, held)
            self.store.secrets.collect(app, stage)
            self.store.bump_generation()
        self._warn_if_live(app, stage, f"secret {name} deleted")

    def list(self, app: str) -> list[SecretInfo]:
        """``app``'s secrets: name, stage, when set, version; never a value."""
        app = self._find_app(app).id
        return [
            SecretInfo(r.app, r.name, r.stage, r.set_at, r.id)
            for r in self.store.secrets.current(app)
        ]

    def values(self, app: str, stage: Stage | str) -> dict[str, str]:
        """The current values of ``app``'s secrets on ``stage`` (trusted side only: a
        test run's action process gets them). No key is needed when there are none."""
        return self._decrypted(self.store.secrets.current(app, Stage.parse(stage)))

    def pinned_values(self, deployment_id: int) -> tuple[str, str, dict[str, str]] | None:
        """The application, stage and pinned values of a deployment (None: no such
        deployment)."""
        found = self.store.secrets.pinned(deployment_id)
        if found is None:
            return None
        app, stage, rows = found
        return app, stage, self._decrypted(rows)

    def _decrypted(self, rows: Sequence[SecretRow]) -> dict[str, str]:
        """Name -> value of ``rows`` (no key needed when there are none)."""
        if not rows:
            return {}
        key = self.key()
        return {row.name: key.decrypt(row) for row in rows}

    def rotate_key(self) -> str:
        """Encrypt every stored version again under a new key, in one transaction, then
        put the new key where the old one was. With ``NOTEBOOK_KIT_SECRETS_KEY`` set, the
        store is re-encrypted and the new key returned, to be put in the variable (it is
        shown once); with a key file, the file is replaced and its path returned."""
        old = self.key()
        self._check_key(old)
        raw = random.token_bytes(32)
        new = SecretsKey(raw, "the new key")
        from_env = bool(os.environ.get(KEY_ENV))
        path = _key_file()
        if not from_env:  # write it first beside the old one: never a store without its key
            _write_key_file(path.with_name(path.name + ".next"), raw, replace=True)
        with self.store.transaction():
            for row in self.store.secrets.every():
                self.store.secrets.rewrite(row.id, new.encrypt(old.decrypt(row)), new.id)
        if from_env:
            return _encode_key(raw)
        os.replace(path.with_name(path.name + ".next"), path)
        return str(path)

    def _check_key(self, key: SecretsKey) -> None:
        """Refuse ``key`` when the store holds values made with another key."""
        held = self.store.secrets.key_ids() - {key.id}
        if held:
            raise SecretKeyError(
                f"the stored secrets were encrypted with key {sorted(held)[0]}; the secrets "
                f"key in force ({key.where}) is {key.id}: set {KEY_ENV} or {KEY_FILE_ENV} "
                "to the key they were made with (docs/secrets.md)"
            )

    def _warn_if_live(self, app: str, stage: Stage, what: str) -> None:
        if self.store.live_deployment_id(stage, app) is not None:
            warnings.warn(
                SecretNotLiveWarning(
                    f"{what}: {app} on {stage} keeps serving the secrets it was deployed "
                    f"with until the next deploy (notebook-kit deploy {app} --stage {stage})"
                ),
                stacklevel=3,
            )

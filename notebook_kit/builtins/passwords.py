"""Password hashes and reset-token digests of the user directory.

A password is stored as ``scrypt$n$r$p$salt$hash`` (hashlib.scrypt, n=2**14, r=8, p=1,
16-byte random salt, 32-byte key): slow to guess, salted so equal passwords differ. A
reset token is high-entropy random text, so a plain SHA-256 of it is enough to store.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

__all__ = ["hash_password", "token_digest", "verify_password"]

_SCRYPT = {"n": 2**14, "r": 8, "p": 1}


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def hash_password(password: str) -> str:
    """``scrypt$n$r$p$salt$hash`` with a fresh 16-byte salt."""
    salt = secrets.token_bytes(16)
    digest = hashlib.scrypt(password.encode(), salt=salt, dklen=32, **_SCRYPT)
    return f"scrypt${_SCRYPT['n']}${_SCRYPT['r']}${_SCRYPT['p']}${_b64(salt)}${_b64(digest)}"


def verify_password(password: str, stored: str | None) -> bool:
    """Whether ``password`` matches ``stored`` (constant-time comparison)."""
    if not stored:
        return False
    try:
        _, n, r, p, salt, digest = stored.split("$")
        expected = base64.b64decode(digest)
        actual = hashlib.scrypt(
            password.encode(),
            salt=base64.b64decode(salt),
            n=int(n),
            r=int(r),
            p=int(p),
            dklen=len(expected),
        )
    except (ValueError, TypeError):
        return False
    return hmac.compare_digest(actual, expected)


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()

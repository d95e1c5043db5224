"""HTTP/1.1 over a raw socket to a server on loopback, so no client library hides or fixes
a byte: send exactly these bytes, read exactly what came back."""

from __future__ import annotations

import json
import socket
import time
from typing import BinaryIO

__all__ = ["exchange", "parse", "read_answer", "read_until_closed"]


def exchange(port: int, data: bytes, wait: float = 5.0) -> tuple[bytes, float]:
    """Send ``data`` on a fresh connection; the first answer's bytes and how long it took."""
    with socket.create_connection(("127.0.0.1", port), timeout=wait) as sock:
        sock.sendall(data)
        started = time.monotonic()
        try:
            answer = sock.recv(65536)
        except TimeoutError:
            answer = b""
        return answer, time.monotonic() - started


def parse(answer: bytes) -> tuple[int, dict[str, str], object]:
    """An answer's status, its headers (lower-case names) and its JSON body (or None)."""
    head, _, body = answer.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
    return int(status_line.split()[1]), headers, json.loads(body) if body else None


def read_answer(reader: BinaryIO, head_only: bool = False) -> tuple[bytes, bytes]:
    """One whole answer from ``reader`` (a socket's ``makefile("rb")``, so what follows the
    answer stays there for the next call): its head (without the empty line that ends
    it) and its body (``Content-Length`` bytes; none for ``head_only``, a HEAD's answer)."""
    lines = []
    while (line := reader.readline()) != b"\r\n":
        if not line:
            raise ConnectionError(f"closed before a whole head: {b''.join(lines)!r}")
        lines.append(line)
    head = b"".join(lines)[:-2]
    length = 0 if head_only else int(parse(head)[1].get("content-length", "0"))
    body = reader.read(length)
    if len(body) < length:
        raise ConnectionError(f"closed after {len(body)} of {length} body bytes")
    return head, body


def read_until_closed(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection."""
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data

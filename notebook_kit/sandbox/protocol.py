"""Messages between processes: a JSON header and one optional binary payload, framed.

Every channel of the sandbox is a Unix stream socket pair. A message is

    !I total length (header + payload)   !I header length   header (JSON)   payload

so a request or an answer body travels as raw bytes, never re-encoded. JSON, never
pickle: the process on the other end may run action code, and unpickling what it sends
would run code of its choosing in the receiver. Descriptors (a process's channel handed
to the worker that will call it) ride on the first bytes of a message (``SCM_RIGHTS``).

``bytes`` values inside a header (a mail attachment) are carried as ``{"$b": base64}``
by ``encode_value``/``decode_value``, used by the built-ins' service channel only.
"""

from __future__ import annotations

import array
import asyncio
import base64
import json
import socket
import struct
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from ..errors import SandboxError

__all__ = [
    "MAX_MESSAGE",
    "AsyncChannel",
    "ChannelClosed",
    "Message",
    "decode_value",
    "encode_value",
    "pack",
    "receive",
    "send",
]

_LENGTHS = struct.Struct("!II")
MAX_MESSAGE = 1 << 30  # one answer body of up to about 1 GiB
_MAX_FDS = 8
_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
_loads = json.loads


class ChannelClosed(SandboxError):
    """The other end closed the channel (or died) before a whole message arrived."""


class Message(NamedTuple):
    header: dict[str, Any]
    payload: bytes
    fds: list[int]


def pack(header: Mapping[str, Any], payload: bytes = b"") -> bytes:
    """One message's bytes."""
    text = _dumps(header).encode()
    return _LENGTHS.pack(len(text) + len(payload), len(text)) + text + payload


def _parse(lengths: bytes | bytearray) -> tuple[int, int]:
    total, head = _LENGTHS.unpack(lengths)
    if total > MAX_MESSAGE or head > total:
        raise SandboxError(f"a message of {total} bytes (header {head}) is refused")
    return total, head


def _decode(body: bytes | bytearray | memoryview, head: int, fds: list[int]) -> Message:
    try:
        header = _loads(bytes(body[:head]))
    except ValueError as exc:
        raise SandboxError(f"a message whose header is not JSON: {exc}") from None
    if not isinstance(header, dict):
        raise SandboxError("a message whose header is not a JSON object")
    return Message(header, bytes(body[head:]), fds)


def send(
    sock: socket.socket, header: Mapping[str, Any], payload: bytes = b"", fds: Iterable[int] = ()
) -> None:
    """Send one message on a blocking socket (``fds`` with its first bytes)."""
    data = pack(header, payload)
    try:
        passed = list(fds)
        if passed:
            sent = socket.send_fds(sock, [data[: _LENGTHS.size]], passed)
            data = data[sent:]
        sock.sendall(data)
    except (BrokenPipeError, ConnectionResetError) as exc:
        raise ChannelClosed(f"the other end is gone ({exc.strerror})") from None


def _read_exactly(sock: socket.socket, size: int, fds: list[int]) -> bytearray:
    buffer = bytearray(size)
    view = memoryview(buffer)
    got = 0
    while got < size:
        chunk, ancillary, _, _ = sock.recvmsg(
            size - got, socket.CMSG_SPACE(_MAX_FDS * array.array("i").itemsize)
        )
        if not chunk:
            raise ChannelClosed("the other end closed the channel")
        view[got : got + len(chunk)] = chunk
        got += len(chunk)
        fds.extend(_fds_of(ancillary))
    return buffer


def _fds_of(ancillary: list[tuple[int, int, bytes]]) -> list[int]:
    found: list[int] = []
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            numbers = array.array("i")
            numbers.frombytes(data[: len(data) - len(data) % numbers.itemsize])
            found.extend(numbers)
    return found


def receive(sock: socket.socket) -> Message:
    """The next message on a blocking socket (ChannelClosed at the end)."""
    fds: list[int] = []
    try:
        total, head = _parse(_read_exactly(sock, _LENGTHS.size, fds))
        return _decode(_read_exactly(sock, total, fds), head, fds)
    except (ConnectionResetError, BrokenPipeError) as exc:
        raise ChannelClosed(f"the other end is gone ({exc.strerror})") from None


class AsyncChannel:
    """One end of a channel on an asyncio loop: ``receive()`` the next message (one
    reader at a time), ``send()`` whole messages (writes never interleave: each is one
    ``sock_sendall``, and the loop runs one at a time per call)."""

    def __init__(self, sock: socket.socket, loop: asyncio.AbstractEventLoop) -> None:
        sock.setblocking(False)
        self.sock = sock
        self._loop = loop
        self._buffer = bytearray()
        self._consumed = 0  # bytes of the stream taken out of the buffer so far
        # Descriptors received, with the stream offset of the last byte that came with
        # them: the kernel ends a read right after the bytes that carried descriptors
        # (unix(7): "ancillary data forms a kind of barrier"), so they belong to the
        # message holding that byte.
        self._fds: list[tuple[int, list[int]]] = []
        self._lock = asyncio.Lock()
        self.closed = False

    async def send(
        self, header: Mapping[str, Any], payload: bytes = b"", fds: Iterable[int] = ()
    ) -> None:
        """Send one whole message (``fds`` with its first bytes)."""
        data = pack(header, payload)
        passed = list(fds)
        try:
            async with self._lock:
                if passed:
                    while True:
                        try:
                            sent = socket.send_fds(self.sock, [data[: _LENGTHS.size]], passed)
                            break
                        except BlockingIOError:
                            await self._writable()
                    data = data[sent:]
                await self._loop.sock_sendall(self.sock, data)
        except OSError as exc:
            self.closed = True
            raise ChannelClosed(f"the other end is gone ({exc.strerror or exc})") from None

    def _writable(self) -> asyncio.Future[None]:
        future: asyncio.Future[None] = self._loop.create_future()
        fd = self.sock.fileno()

        def ready() -> None:
            self._loop.remove_writer(fd)
            if not future.done():
                future.set_result(None)

        self._loop.add_writer(fd, ready)
        future.add_done_callback(lambda _: self._loop.remove_writer(fd))
        return future

    async def receive(self) -> Message:
        while True:
            message = self._take()
            if message is not None:
                return message
            await self._fill()

    def _take(self) -> Message | None:
        buffer = self._buffer
        if len(buffer) < _LENGTHS.size:
            return None
        total, head = _parse(buffer[: _LENGTHS.size])
        end = _LENGTHS.size + total
        if len(buffer) < end:
            return None
        last = self._consumed + end
        fds = [fd for offset, got in self._fds if offset < last for fd in got]
        self._fds = [(offset, got) for offset, got in self._fds if offset >= last]
        message = _decode(memoryview(buffer)[_LENGTHS.size : end], head, fds)
        del buffer[:end]
        self._consumed = last
        return message

    async def _fill(self) -> None:
        while True:
            try:
                chunk, ancillary, _, _ = self.sock.recvmsg(
                    1 << 16, socket.CMSG_SPACE(_MAX_FDS * array.array("i").itemsize)
                )
            except BlockingIOError:
                await self._readable()
                continue
            except OSError as exc:
                self.closed = True
                raise ChannelClosed(f"the other end is gone ({exc.strerror})") from None
            if not chunk:
                self.closed = True
                raise ChannelClosed("the other end closed the channel")
            self._buffer += chunk
            fds = _fds_of(ancillary)
            if fds:
                self._fds.append((self._consumed + len(self._buffer) - 1, fds))
            return

    def _readable(self) -> asyncio.Future[None]:
        future: asyncio.Future[None] = self._loop.create_future()
        fd = self.sock.fileno()

        def ready() -> None:
            self._loop.remove_reader(fd)
            if not future.done():
                future.set_result(None)

        self._loop.add_reader(fd, ready)
        future.add_done_callback(lambda _: self._loop.remove_reader(fd))
        return future

    def close(self) -> None:
        """Close it; the loop forgets it first (a descriptor closed while the loop
        watches it would leave the loop watching whatever reuses its number)."""
        self.closed = True
        fd = self.sock.fileno()
        if fd >= 0:
            self._loop.remove_reader(fd)
            self._loop.remove_writer(fd)
        self.sock.close()


def encode_value(value: Any) -> Any:
    """``value`` with every ``bytes`` inside made JSON (``{"$b": base64}``)."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"$b": base64.b64encode(bytes(value)).decode()}
    if isinstance(value, Mapping):
        return {str(k): encode_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [encode_value(v) for v in value]
    return value


def decode_value(value: Any) -> Any:
    """The inverse of ``encode_value``."""
    if isinstance(value, dict):
        if len(value) == 1 and isinstance(value.get("$b"), str):
            return base64.b64decode(value["$b"])
        return {k: decode_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode_value(v) for v in value]
    return value

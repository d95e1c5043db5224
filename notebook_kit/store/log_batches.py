"""How a batch of request-log entries is stored: columns of numbers and one string table.

A server worker answers thousands of calls a second, and is a sandboxed process: what it
sends the supervisor must be cheap to make and safe to read (never a pickle, which would
run code in whoever loads it). A batch is

    b"NKL3"  !d clock offset  !I header length  header (JSON)  columns

The offset turns the entries' clock readings into epoch seconds: the supervisor sets it
(``stamp``, which also checks the batch's shape and tells its size) before storing the
bytes as they came. The header holds the entry count, the strings (stages, errors), the
(method, path) keys, the (stage, app, API ID) of the actions that ran, and the recorded
requests by entry index. The columns are ``n`` items each: started and ended (``d``: the
worker's ``perf_counter`` readings, which the reader turns into wall time with the
batch's offset), stage (``i``: a string), key (``i``), status (``i``), action (``i``,
-1: none), error (``i``, -1: none), deployment (``q``, -1: none), consumer (``i``: a
string, -1: none; batches of the previous format, ``NKL2``, stop before it and are still
read). A recorded request's
body is kept as base64 (``body`` then holds text). Encoding is a few C-level passes
(under a microsecond an entry); a reader checks every length and index (``decode_batch``
raises ValueError on anything malformed, and the log skips such a batch).
"""

from __future__ import annotations

import base64
import json
import struct
from array import array
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["MAGIC", "decode_batch", "encode_batch", "is_batch", "stamp"]

MAGIC = b"NKL3"
_FORMATS = {MAGIC: "ddiiiiiqi", b"NKL2": "ddiiiiiq"}  # the columns of each format
_OFFSET = struct.Struct("!d")
_LENGTH = struct.Struct("!I")
_HEAD = 4 + _OFFSET.size + _LENGTH.size
# started, ended, stage, key, status, action, error, deployment, consumer
_COLUMNS = _FORMATS[MAGIC]
_dumps = json.JSONEncoder(separators=(",", ":")).encode


def _index(table: dict[Any, int], values: Sequence[Any]) -> list[int]:
    setdefault = table.setdefault
    return [setdefault(v, len(table)) for v in values]


def _record_out(record: Mapping[str, Any]) -> dict[str, Any]:
    body = record.get("body")
    if isinstance(body, (bytes, bytearray)):
        return {**record, "body": base64.b64encode(body).decode(), "body_b64": True}
    return dict(record)


def _record_in(record: Any) -> dict[str, Any]:
    found = dict(record)
    if found.pop("body_b64", False):
        found["body"] = base64.b64decode(found["body"])
    return found


def encode_batch(entries: Sequence[Sequence[Any]]) -> bytes:
    """``entries`` (the runtime's tuples: started, ended, stage, (method, path), status,
    (stage, app, id) or None, error or None, deployment or None, consumer or None[,
    recorded request]) as one batch, its clock offset 0 (``stamp`` sets it)."""
    strings: dict[str, int] = {}
    keys: dict[tuple[str, str], int] = {}
    actions: dict[Any, int] = {None: -1}
    columns = [
        array("d", [e[0] for e in entries]),
        array("d", [e[1] for e in entries]),
        array("i", _index(strings, [e[2] for e in entries])),
        array("i", _index(keys, [e[3] for e in entries])),
        array("i", [e[4] for e in entries]),
        array("i", [actions.setdefault(e[5], len(actions) - 1) for e in entries]),
        array(
            "i", [-1 if e[6] is None else strings.setdefault(e[6], len(strings)) for e in entries]
        ),
        array("q", [-1 if e[7] is None else e[7] for e in entries]),
        array(
            "i", [-1 if e[8] is None else strings.setdefault(e[8], len(strings)) for e in entries]
        ),
    ]
    records = {
        str(i): _record_out(e[9]) for i, e in enumerate(entries) if len(e) > 9 and e[9] is not None
    }
    header = {
        "n": len(entries),
        "strings": list(strings),
        "keys": [list(k) for k in keys],
        "actions": [list(a) for a in actions if a is not None],
    }
    if records:
        header["records"] = records
    text = _dumps(header).encode()
    parts = (MAGIC, _OFFSET.pack(0.0), _LENGTH.pack(len(text)), text)
    return b"".join((*parts, *(c.tobytes() for c in columns)))


def is_batch(blob: bytes) -> bool:
    return blob[:4] in _FORMATS


def _row_bytes(blob: bytes) -> int:
    return sum(array(code).itemsize for code in _FORMATS[blob[:4]])


def _header(blob: bytes) -> tuple[dict[str, Any], int]:
    if blob[:4] not in _FORMATS or len(blob) < _HEAD:
        raise ValueError("not a log batch")
    (size,) = _LENGTH.unpack_from(blob, 4 + _OFFSET.size)
    start = _HEAD + size
    header = json.loads(blob[_HEAD:start])
    if not isinstance(header, dict):
        raise ValueError("a log batch without its header")
    return header, start


def stamp(blob: bytes, offset: float) -> tuple[bytes, int]:
    """``blob`` with its clock offset set, and how many entries it holds. Raises
    ValueError unless it is a whole batch (its header's count fits its columns)."""
    try:
        header, start = _header(blob)
        n = int(header["n"])
    except (KeyError, TypeError, struct.error, UnicodeDecodeError) as exc:
        raise ValueError(f"a malformed log batch ({exc!r})") from None
    if n < 0 or len(blob) != start + n * _row_bytes(blob):
        raise ValueError("a log batch whose columns do not hold its entries")
    return b"".join((blob[:4], _OFFSET.pack(offset), blob[4 + _OFFSET.size :])), n


def decode_batch(blob: bytes) -> tuple[float, list[tuple[Any, ...]]]:
    """A batch's clock offset and entries as the runtime's tuples (the consumer ninth,
    None in the previous format; a recorded request, when there is one, tenth). Raises
    ValueError for anything malformed."""
    try:
        return _decode(blob)
    except (KeyError, IndexError, TypeError, AttributeError, struct.error) as exc:
        raise ValueError(f"a malformed log batch ({exc})") from None


def _decode(blob: bytes) -> tuple[float, list[tuple[Any, ...]]]:
    header, start = _header(blob)
    (offset,) = _OFFSET.unpack_from(blob, 4)
    n = int(header["n"])
    strings = [str(s) for s in header["strings"]]
    keys = [(str(k[0]), str(k[1])) for k in header["keys"]]
    actions = [(str(a[0]), str(a[1]), str(a[2])) for a in header["actions"]]
    columns = []
    for code in _FORMATS[blob[:4]]:
        column = array(code)
        end = start + n * column.itemsize
        if end > len(blob):
            raise ValueError("a log batch cut short")
        column.frombytes(blob[start:end])
        columns.append(column)
        start = end
    if len(columns) == len(_COLUMNS):
        started, ended, stage, key, status, action, error, served, consumer = columns
    else:
        started, ended, stage, key, status, action, error, served = columns
        consumer = array("i", [-1]) * n
    records = {int(i): r for i, r in dict(header.get("records") or {}).items()}
    entries: list[tuple[Any, ...]] = []
    for i in range(n):
        entry: tuple[Any, ...] = (
            started[i],
            ended[i],
            strings[stage[i]],
            keys[key[i]],
            status[i],
            actions[action[i]] if action[i] >= 0 else None,
            strings[error[i]] if error[i] >= 0 else None,
            served[i] if served[i] >= 0 else None,
            strings[consumer[i]] if consumer[i] >= 0 else None,
        )
        if i in records:
            entry += (_record_in(records[i]),)
        entries.append(entry)
    return offset, entries

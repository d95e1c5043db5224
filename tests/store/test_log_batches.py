"""Log batches as a worker sends them (``store.log_batches``): what comes from a
sandboxed worker is checked, so any malformed batch is a ValueError (the supervisor
logs it and goes on), never another exception, and a whole one reads back as sent."""

from __future__ import annotations

import json
import random
import struct

import pytest

from notebook_kit.store.log_batches import MAGIC, decode_batch, encode_batch, stamp

ENTRIES = [
    (1.0, 1.5, "dev", ("GET", "/dev/app/x"), 200, ("dev", "app", "x"), None, 7, "alice"),
    (2.0, 2.25, "prod", ("POST", "/prod/app/y"), 500, None, "ValueError: no", None, None),
]
RECORDED = (*ENTRIES[0], {"method": "GET", "path": "/dev/app/x", "body": "aGk=", "body_b64": True})


def _header_of(batch: bytes) -> tuple[int, dict[str, object]]:
    at = len(MAGIC) + 8
    (size,) = struct.unpack_from("!I", batch, at)
    start = at + 4
    return start, json.loads(batch[start : start + size])


def test_a_whole_batch_reads_back_as_sent() -> None:
    batch, count = stamp(encode_batch([*ENTRIES, RECORDED]), 100.0)
    assert count == 3
    offset, entries = decode_batch(batch)
    assert offset == 100.0
    assert entries[:2] == ENTRIES
    assert entries[2][:9] == ENTRIES[0] and entries[2][9]["body"] == b"hi"


def test_a_batch_of_the_previous_format_reads_with_no_consumer() -> None:
    """Batches stored before consumers (``NKL2``: no consumer column) still read."""
    batch = encode_batch(ENTRIES)
    start, header = _header_of(batch)
    n = len(ENTRIES)
    old = b"NKL2" + batch[4 : start + len(json.dumps(header, separators=(",", ":")))]
    old += batch[len(old) : len(batch) - 4 * n]  # every column but the last (consumer)
    stamped, count = stamp(old, 5.0)
    assert count == n
    _, entries = decode_batch(stamped)
    assert [e[:8] for e in entries] == [e[:8] for e in ENTRIES]
    assert [e[8] for e in entries] == [None, None]


@pytest.mark.parametrize(
    "header",
    [{}, {"n": "x"}, {"n": None}, {"n": [1]}, {"n": -1}, [], "text", 3, {"n": 10**9}],
)
def test_a_malformed_header_is_a_value_error(header: object) -> None:
    batch = encode_batch(ENTRIES)
    start, _ = _header_of(batch)
    text = json.dumps(header).encode()
    forged = batch[: start - 4] + struct.pack("!I", len(text)) + text
    with pytest.raises(ValueError):
        stamp(forged, 0.0)


def test_random_damage_is_always_a_value_error_or_a_batch() -> None:
    whole = encode_batch([*ENTRIES, RECORDED])
    start, header = _header_of(whole)
    shuffle = random.Random(24)
    values: list[object] = [None, -1, 2, "x", [], {}, [[1]], {"1": 5}, 1.5, 10**12]
    for _ in range(3000):
        blob = bytearray(whole)
        damage = shuffle.randrange(4)
        if damage == 0:  # bytes flipped anywhere
            for _ in range(shuffle.randrange(1, 4)):
                blob[shuffle.randrange(len(blob))] = shuffle.randrange(256)
        elif damage == 1:  # cut short
            del blob[shuffle.randrange(len(blob)) :]
        else:  # a field of the header replaced, the columns kept
            forged = dict(header)
            forged[shuffle.choice([*header, "records"])] = shuffle.choice(values)
            text = json.dumps(forged).encode()
            size = struct.unpack_from("!I", whole, start - 4)[0]
            blob = bytearray(
                whole[: start - 4] + struct.pack("!I", len(text)) + text + whole[start + size :]
            )
        try:
            stamped, _ = stamp(bytes(blob), 0.0)
            decode_batch(stamped)
        except ValueError:
            continue

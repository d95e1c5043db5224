"""``fn.csvToObject``: quoted fields, BOM, embedded newlines, ragged rows."""

from __future__ import annotations

from typing import Any

import pytest

from notebook_kit.builtins.functions import Functions
from notebook_kit.errors import BuiltinError


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a,b\n1,2\n", [{"a": "1", "b": "2"}]),
        ("a,b\r\n1,2\r\n3,4", [{"a": "1", "b": "2"}, {"a": "3", "b": "4"}]),
        ('name,note\n"Lee, Ann","said ""hi"""\n', [{"name": "Lee, Ann", "note": 'said "hi"'}]),
        ('a,b\n"line one\nline two",x\n', [{"a": "line one\nline two", "b": "x"}]),
        ("\ufeffid,name\n1,Ann\n", [{"id": "1", "name": "Ann"}]),
        (b"\xef\xbb\xbfid,name\n1,\xc3\x85sa\n", [{"id": "1", "name": "\u00c5sa"}]),
        ("a,b,c\n1,2\n", [{"a": "1", "b": "2", "c": None}]),
        ("a,b\n1,2,3\n", [{"a": "1", "b": "2", "_extra": ["3"]}]),
        ("a,b\n", []),
        ("", []),
        ("a,b\n,\n", [{"a": "", "b": ""}]),
    ],
)
def test_csv_to_object_parses(text: str | bytes, expected: list[dict[Any, Any]]) -> None:
    assert Functions().csvToObject(text) == expected


@pytest.mark.parametrize("value", [None, 5, ["a,b"], b"\xff\xfe"])
def test_csv_to_object_refuses_what_is_not_csv_text(value: Any) -> None:
    with pytest.raises(BuiltinError, match="csvToObject"):
        Functions().csvToObject(value)

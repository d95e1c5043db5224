"""The notebook's consumer frames: ``ws.usage()`` and ``ws.consumers_frame()`` columns and
dtypes, empty or not, and never a key."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from notebook_kit.notebook.workspace import Workspace

COLUMNS = ["consumer", "application", "stage", "calls", "4xx", "5xx", "quota_used", "quota_left"]
DTYPES = ["str", "str", "str", "int64", "int64", "int64", "Int64", "Int64"]


def test_usage_frame_empty_has_the_columns_and_dtypes(home: Path) -> None:
    frame = Workspace(home).usage()
    assert isinstance(frame, pd.DataFrame) and frame.empty
    assert list(frame.columns) == COLUMNS
    assert [str(t) for t in frame.dtypes] == DTYPES


def test_usage_frame_rows_with_and_without_quota(home: Path) -> None:
    ws = Workspace(home)
    ws.consumers.create("alice", quota="10/day")
    ws.consumers.create("bob")
    with ws.store.transaction():
        ws.store.consumers.add_usage(
            [
                ("alice", "shop", "dev", "2026-01-02", 4, 1, 0),
                ("bob", "shop", "prod", "2026-01-02", 2, 0, 2),
            ]
        )
    frame = ws.usage()
    assert list(frame.columns) == COLUMNS and [str(t) for t in frame.dtypes] == DTYPES
    assert frame.loc[0, ["consumer", "calls", "4xx", "quota_used", "quota_left"]].tolist() == [
        "alice", 4, 1, 0, 10,
    ]  # fmt: skip
    assert frame.loc[1, "quota_used"] is pd.NA and frame.loc[1, "quota_left"] is pd.NA
    only_bob = ws.usage("bob")
    assert only_bob["consumer"].tolist() == ["bob"] and int(only_bob["5xx"].sum()) == 2


def test_consumers_frame_lists_keys_by_prefix_only(home: Path) -> None:
    ws = Workspace(home)
    new = ws.consumers.create("alice", rate="5/s", burst=2)
    frame = ws.consumers_frame()
    assert list(frame.columns) == [
        "name", "apps", "stages", "rate", "burst", "quota", "keys", "builtin",
    ]  # fmt: skip
    assert frame["name"].tolist() == ["stage:dev", "stage:prod", "alice"]
    assert frame["builtin"].tolist() == [True, True, False]
    alice = frame.iloc[2]
    assert (alice["rate"], alice["burst"], alice["keys"]) == ("5/s", 2, [new["prefix"]])
    assert new["key"] not in frame.to_string()

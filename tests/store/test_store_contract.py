"""The store contract: every behaviour a store owes the workspace, on BOTH stores.

Each test runs on the SQLite file in the workspace and on a fresh PostgreSQL database of
the session's server (``tests/pg.py``), through the same ``Workspace``/``Store`` calls.
"""

from __future__ import annotations

import multiprocessing
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from notebook_kit.domain.models import Application, Definition, Stage
from notebook_kit.errors import ConflictError, NotFoundError, StoreError, ValidationError
from notebook_kit.runtime.process.handles import BackgroundServer
from notebook_kit.store import Store
from notebook_kit.store.request_log import TRIM_SQL
from notebook_kit.workspace.workspace import Workspace


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest) -> str:
    """ "" (the SQLite file in the workspace) or a new PostgreSQL database's URL."""
    if request.param == "sqlite":
        return ""
    return str(request.getfixturevalue("fresh_database"))


@pytest.fixture
def ws(tmp_path: Path, store_url: str) -> Workspace:
    return Workspace(tmp_path / "home", store=store_url)


def _reopen(ws: Workspace, store_url: str) -> Workspace:
    """Another workspace (another process's view) on the same store."""
    return Workspace(ws.home if not store_url else ws.home.parent / "other", store=store_url)


def _shop(ws: Workspace) -> None:
    ws.create("shop", "list", label="List", method="GET", resource="items", action="res.send(1)")
    ws.create("shop", "Add", label="Add", method="POST", resource="items", action="res.send(2)")
    ws.create("shop", "one", label="One", method="GET", resource="items/{id}", action="")


def _action(ws: Workspace, api_id: str) -> str:
    """The action of ``api_id`` of shop as live on dev."""
    return next(d.action for d in ws.live("dev")["shop"] if d.id == api_id)


# -- applications and definitions --------------------------------------------------------


def test_applications_created_listed_and_deleted(ws: Workspace) -> None:
    ws.create_application("b", "Bee")
    ws.create_application("a")
    assert [(a.id, a.label) for a in ws.applications()] == [("a", "a"), ("b", "Bee")]
    with pytest.raises(ConflictError, match="already exists"):
        ws.create_application("a")
    ws.delete_application("b")
    assert [a.id for a in ws.applications()] == ["a"]
    with pytest.raises(NotFoundError):
        ws.application("b")


def test_definitions_round_trip_in_byte_order(ws: Workspace) -> None:
    _shop(ws)
    ws.create("shop", "Zed", label="Z", method="GET", resource="Zoo", action="", timeout=2.5)
    listed = ws.definitions("shop")
    # ORDER BY app, resource, method, id: upper case sorts before lower case on both.
    assert [(d.resource, d.method, d.id) for d in listed] == [
        ("Zoo", "GET", "Zed"),
        ("items", "GET", "list"),
        ("items", "POST", "Add"),
        ("items/{id}", "GET", "one"),
    ]
    zed = ws.get("shop", "Zed")
    assert (zed.timeout, zed.requires_auth, zed.label) == (2.5, True, "Z")
    renamed = ws.edit("shop", "Zed", new_id="zed", requires_auth=False, timeout=None)
    assert (renamed.id, renamed.requires_auth, renamed.timeout) == ("zed", False, None)
    assert renamed.created_at == zed.created_at
    ws.delete("shop", "zed")
    with pytest.raises(NotFoundError):
        ws.get("shop", "zed")


def test_refused_create_changes_nothing(ws: Workspace) -> None:
    _shop(ws)
    before = ws.definitions()
    with pytest.raises(ConflictError):
        ws.create("shop", "list", label="again", method="GET", resource="other", action="")
    assert ws.definitions() == before


# -- examples ----------------------------------------------------------------------------


def _examples(ws: Workspace, app: str = "shop") -> list[tuple[str, str, int]]:
    return [(e.api_id, e.name, e.expect.status) for e in ws.examples(app)]


def test_examples_round_trip_follow_renames_and_go_with_their_definition(
    ws: Workspace, store_url: str
) -> None:
    _shop(ws)
    ws.add_example("shop", "one", "b", request={"path_parameters": {"id": "7"}})
    ws.add_example(
        "shop",
        "one",
        "A",
        request={"path_parameters": {"id": "8"}, "query": "x=1", "headers": {"X-A": "1"}},
        expect={"status": 404, "json": {"items.0.name": "Ada", "ok": True}, "max_ms": 250},
    )
    ws.add_example("shop", "list", "all", expect={"json": {"$": 1}})
    stamp = ws.change_stamp()
    other = _reopen(ws, store_url)
    assert _examples(other) == [("list", "all", 200), ("one", "A", 404), ("one", "b", 200)]
    a = other.examples("shop", "one")[0]
    assert a.request.to_dict() == {
        "path_parameters": {"id": "8"},
        "query": "x=1",
        "headers": {"X-A": "1"},
        "body": "",
    }
    assert a.expect.to_dict() == {
        "status": 404,
        "json": {"items.0.name": "Ada", "ok": True},
        "max_ms": 250.0,
    }
    again = {"path_parameters": {"id": "7"}}
    ws.add_example("shop", "one", "b", request=again, expect={"status": 201}, replace=True)
    assert ws.change_stamp() != stamp  # studios notice an example saved elsewhere
    ws.edit("shop", "one", new_id="single")  # a rename carries its examples
    assert _examples(other) == [("list", "all", 200), ("single", "A", 404), ("single", "b", 201)]
    ws.delete("shop", "single")  # deleting a definition deletes its examples
    assert _examples(other) == [("list", "all", 200)]
    ws.remove_example("shop", "list", "all")
    assert _examples(other) == []
    ws.add_example("shop", "list", "again")
    ws.delete_application("shop")  # and deleting the application, all of them
    ws.create("shop", "list", label="L", method="GET", resource="items", action="")
    assert _examples(other) == []


def test_refused_examples_change_nothing(ws: Workspace) -> None:
    _shop(ws)
    ws.add_example("shop", "one", "x", request={"path_parameters": {"id": "1"}})
    before = ws.examples("shop")
    with pytest.raises(ConflictError, match="already has an example 'x'"):
        ws.add_example("shop", "one", "x", request={"path_parameters": {"id": "2"}})
    with pytest.raises(ValidationError, match=r"path parameter \{id\}"):
        ws.add_example("shop", "one", "y")
    with pytest.raises(NotFoundError, match="no definition 'nope'"):
        ws.add_example("shop", "nope", "z")
    with pytest.raises(NotFoundError, match="has no example 'w'"):
        ws.remove_example("shop", "one", "w")
    assert ws.examples("shop") == before


def test_deployments_keep_forced_and_checks(ws: Workspace, store_url: str) -> None:
    _shop(ws)
    ws.edit("shop", "list", action="res.body = {'n': 1}")
    plain = ws.deploy("shop", "dev")
    ws.add_example("shop", "list", "one", expect={"json": {"n": 1}})
    checked = ws.deploy("shop", "dev")
    ws.add_example("shop", "list", "two", expect={"json": {"n": 2}})
    forced = ws.deploy("shop", "dev", force=True)
    history = {d.id: d for d in _reopen(ws, store_url).deployments("shop")}
    assert (history[plain.id].forced, history[plain.id].checks) == (False, None)
    assert history[checked.id].forced is False
    assert history[checked.id].checks_summary() == "1 pass"
    assert history[forced.id].forced is True
    assert history[forced.id].checks_summary() == "1 of 2 fail, forced"
    failing = [r for r in (history[forced.id].checks or {})["results"] if not r["passed"]]
    assert failing[0]["differences"] == ["n is 1, expected 2"]


# -- deployments, live, rollback ----------------------------------------------------------


def test_deploy_undeploy_rollback_keep_history_and_live(ws: Workspace, store_url: str) -> None:
    _shop(ws)
    first = ws.deploy("shop", "dev")
    ws.edit("shop", "list", action="res.send(10)")
    second = ws.deploy("shop", "dev")
    assert second.id > first.id
    assert _action(ws, "list") == "res.send(10)"
    assert ws.deployed_state(ws.get("shop", "list"), "dev") == "deployed"
    assert ws.deployed_state(ws.get("shop", "list"), "prod") == "not deployed"
    back = ws.rollback("shop", "dev")
    assert back.id == first.id
    assert _action(ws, "list") == "res.send(1)"
    ws.undeploy("shop", "dev")
    assert ws.live("dev") == {}
    history = _reopen(ws, store_url).deployments("shop")
    assert [(d.id, d.stage, d.active) for d in history] == [
        (first.id, Stage.DEV, False),
        (second.id, Stage.DEV, False),
    ]
    assert ws.rollback("shop", "dev").id == second.id  # after an undeploy: the latest


def test_deployment_ids_continue_after_reopening(ws: Workspace, store_url: str) -> None:
    _shop(ws)
    first = ws.deploy("shop", "prod")
    other = _reopen(ws, store_url)
    assert other.deploy("shop", "prod").id == first.id + 1
    assert [d.active for d in ws.deployments()] == [False, True]


# -- keys, settings, generation -----------------------------------------------------------


def test_keys_per_stage_survive_reopening_and_rotate(ws: Workspace, store_url: str) -> None:
    keys = ws.keys()
    assert set(keys) == {"dev", "prod"} and keys["dev"] != keys["prod"]
    assert all(len(k) == 40 and k.isalnum() for k in keys.values())
    assert _reopen(ws, store_url).keys() == keys
    generation = ws.store.generation()
    new = ws.rotate_key("prod")
    assert ws.keys() == {"dev": keys["dev"], "prod": new}
    assert ws.store.generation() == generation + 1


def test_settings_stored_reset_and_bump_the_generation(ws: Workspace) -> None:
    generation = ws.store.generation()
    ws.set_setting("request_log_size", "7")
    assert ws.setting("request_log_size") == 7
    ws.set_setting("request_log_size", None)
    assert ws.setting("request_log_size") != 7
    assert ws.store.generation() == generation + 2
    with pytest.raises(ValidationError):
        ws.set_setting("request_log_size", "many")
    assert ws.store.generation() == generation + 2


def test_every_change_to_what_is_live_bumps_the_generation(ws: Workspace) -> None:
    _shop(ws)
    seen = [ws.store.generation()]
    for change in (
        lambda: ws.deploy("shop", "dev"),
        lambda: ws.deploy("shop", "dev"),
        lambda: ws.rollback("shop", "dev"),
        lambda: ws.undeploy("shop", "dev"),
        lambda: ws.rotate_key("dev"),
        lambda: ws.set_setting("rate_limit_dev", "5"),
        lambda: ws.delete_application("shop"),
    ):
        change()
        seen.append(ws.store.generation())
    assert seen == sorted(set(seen)), seen


# -- users, groups, password resets -------------------------------------------------------


def test_users_groups_and_resets(ws: Workspace) -> None:
    users = ws.users()
    users.create_user({"email": "Ann@x.org", "name": "Ann", "password": "secret-123"})
    users.create_user({"email": "bob@x.org", "name": "Bob_1"})
    users.create_group({"name": "staff"})
    users.add_users({"groupName": "staff", "emails": ["ann@x.org"]})
    assert users.verify_password("ann@x.org", "secret-123")
    assert [u["email"] for u in users.get_users("staff")["users"]] == ["Ann@x.org"]
    assert [u["email"] for u in users.by_email("B")["users"]] == ["bob@x.org"]
    assert [u["email"] for u in users.by_name("_")["users"]] == ["bob@x.org"]  # no wildcard
    assert [(g["name"], g["userCount"]) for g in users.all_groups()] == [("staff", 1)]
    tables = ws.store.users
    with ws.store.transaction():
        tables.insert_reset("h1", "ann@x.org", 1e9 + 0.25, "t0")
    assert tables.reset_expiry("h1", "ann@x.org") == 1e9 + 0.25
    with ws.store.transaction():
        tables.update_user("ann@x.org", {"email_key": "anne@x.org", "email": "anne@x.org"})
    assert tables.reset_expiry("h1", "anne@x.org") == 1e9 + 0.25  # carried by the new key
    assert tables.groups_of(["anne@x.org"]) == {"anne@x.org": ["staff"]}
    users.delete_user("anne@x.org")
    assert tables.reset_expiry("h1", "anne@x.org") is None
    assert [(g["name"], g["userCount"]) for g in users.all_groups()] == [("staff", 0)]


# -- request log and action stats ---------------------------------------------------------


def test_request_log_keeps_the_newest_in_order(ws: Workspace) -> None:
    store = ws.store
    store.append_requests([("t", "dev", "GET", f"/p{i}", 200, 1.0) for i in range(5)], keep=3)
    assert [r["path"] for r in store.request_log()] == ["/p2", "/p3", "/p4"]
    # runtime entries: perf_counter times and an offset, turned into wall time when read
    entry = (10.0, 10.5, "prod", ("POST", "/q"), 201, None, None)
    store.append_requests([entry], keep=3, at_offset=1_700_000_000.0)
    last = store.request_log(limit=1)[0]
    assert (last["method"], last["path"], last["status"], last["duration_ms"]) == (
        "POST",
        "/q",
        201,
        500.0,
    )
    assert last["at"].startswith("2023-11-14T22:13:30")


def _commit_setting(ws: Workspace, store_url: str) -> str:
    """How this thread's store connection commits now (SQLite's synchronous level, or
    PostgreSQL's synchronous_commit)."""
    sql = "SHOW synchronous_commit" if store_url else "PRAGMA synchronous"
    return str(ws.store._db.execute(sql).fetchone()[0])


def test_a_commit_that_need_not_wait_for_the_disk_is_one_transaction_alone(
    ws: Workspace, store_url: str
) -> None:
    # The request log's commits do not wait for the disk; the setting is the
    # transaction's own, and the store's other commits still wait.
    db = ws.store._db
    durable = _commit_setting(ws, store_url)
    assert durable == ("on" if store_url else "2")  # FULL
    with db.transaction(None, durable=False):
        assert _commit_setting(ws, store_url) == ("off" if store_url else "1")  # NORMAL
        with db.transaction(None):  # a nested one joins it
            db.write("UPDATE meta SET value = value WHERE key = 'generation'")
    assert _commit_setting(ws, store_url) == durable
    with pytest.raises(RuntimeError), db.transaction(None, durable=False):
        raise RuntimeError("rolled back")
    assert _commit_setting(ws, store_url) == durable
    ws.store.append_requests([("t", "dev", "GET", "/p", 200, 1.0)], keep=3)
    assert [r["path"] for r in ws.store.request_log()] == ["/p"]
    assert _commit_setting(ws, store_url) == durable


def test_request_log_numbers_entries_and_names_who_answered(ws: Workspace, store_url: str) -> None:
    store = ws.store
    store.append_requests([("t", "dev", "GET", f"/p{i}", 200, 1.0) for i in range(3)], keep=4)
    old = (1.0, 1.1, "dev", ("GET", "/old"), 200, None, None)  # before canaries: 7 items
    new = [(2.0 + n, 2.1 + n, "prod", ("GET", f"/n{n}"), 200, None, None, 40 + n) for n in range(2)]
    store.append_requests([old, *new], keep=4, at_offset=1_700_000_000.0)
    rows = _reopen(ws, store_url).store.request_log(4)
    assert [(r["id"], r["path"], r["deployment"]) for r in rows] == [
        (3, "/p2", None),
        (4, "/old", None),
        (5, "/n0", 40),
        (6, "/n1", 41),
    ]  # the number stays with an entry while it is kept
    assert store.outcomes_since(4) == [
        (200, pytest.approx(100.0), 40),
        (200, pytest.approx(100.0), 41),
    ]
    assert store.outcomes_since(2) == [
        (200, 1.0, None),
        (200, pytest.approx(100.0), None),
        *store.outcomes_since(4),
    ]
    assert store.outcomes_since(6) == []
    recorded = {"method": "GET", "path": "/r", "query": "", "headers": [], "body": b"\x00b"}
    entry = (3.0, 3.1, "dev", ("GET", "/r"), 200, None, None, 7, "alice", recorded)
    before = (3.5, 3.6, "dev", ("GET", "/r"), 200, None, None, 7, recorded)  # no consumer yet
    store.append_requests([entry, before], keep=4, at_offset=1_700_000_000.0)
    found = _reopen(ws, store_url).store.request_log_entry(7)
    assert found is not None
    assert (found["deployment"], found["consumer"], found["request"]) == (7, "alice", recorded)
    older = store.request_log_entry(8)
    assert older is not None and (older["consumer"], older["request"]) == (None, recorded)
    assert store.request_log_entry(5)["request"] is None  # type: ignore[index]
    assert store.request_log_entry(99) is None
    assert store.request_log_entry(5)["consumer"] is None  # type: ignore[index]


def test_a_canary_rides_on_the_live_pointer(ws: Workspace, store_url: str) -> None:
    _shop(ws)
    live = ws.deploy("shop", "prod").id
    ws.edit("shop", "list", action="res.send(3)")
    ws.store.append_requests([("t", "prod", "GET", "/before", 500, 1.0)], keep=100)
    canary = ws.deploy("shop", "prod", canary=25, rollback_above=5).id
    other = _reopen(ws, store_url)  # another node's view
    generation, pointers, _, canaries = other.store.live_view()
    assert generation == ws.store.generation()
    assert (Stage.PROD, "shop", live) in pointers  # the live pointer stays
    [(stage, app, live_id, canary_id, percent, started, above, log_from)] = canaries
    assert (stage, app, live_id, canary_id, percent, above) == (
        Stage.PROD,
        "shop",
        live,
        canary,
        25,
        5.0,
    )
    assert started and log_from == 1  # the one entry logged before it started
    ws.set_setting("deployments_kept", "1")
    ws.deploy("shop", "dev")  # prunes: the canary and the live one stay
    assert {live, canary} <= {d.id for d in other.deployments("shop")}
    with ws.store.transaction():
        ws.store.canaries.end(Stage.PROD, "shop", "ended for a reason")
    assert other.canary("shop") is None and other.canaries.ended("shop") == "ended for a reason"
    ws.deploy("shop", "prod", canary=10)
    assert other.canaries.ended("shop") is None
    promoted = ws.promote("shop")
    assert other.store.live_view()[3] == []
    assert other.store.live_deployment_id(Stage.PROD, "shop") == promoted.id


def test_request_log_trim_drops_whole_old_batches(ws: Workspace) -> None:
    store = ws.store
    for n in range(50):
        store.append_requests([(float(n), "dev", "GET", f"/p{n}", 200, 1.0)], 10)
    batches = store._db.execute("SELECT COUNT(*) FROM request_log_batches").fetchone()[0]
    assert batches == 10
    assert [r["path"] for r in store.request_log()] == [f"/p{n}" for n in range(40, 50)]


def test_request_log_trim_uses_the_upto_index(ws: Workspace, store_url: str) -> None:
    # A flush costs the same whatever the log's size: the trim is an index range.
    store = ws.store
    if store_url:
        with store.transaction():
            store._db.write("SET LOCAL enable_seqscan = off")
            plan = " ".join(r[0] for r in store._db.execute(f"EXPLAIN {TRIM_SQL}", (5,)))
        assert "request_log_batches_by_upto" in plan, plan
    else:
        rows = store._db.execute(f"EXPLAIN QUERY PLAN {TRIM_SQL}", (5,)).fetchall()
        assert "request_log_batches_by_upto" in " ".join(str(r[3]) for r in rows)


def test_action_stats_add_up(ws: Workspace) -> None:
    store = ws.store
    store.append_requests([], 10, [("dev", "a", "x", 2, 1, 500, "t1", "Boom", "t1", 0)])
    store.append_requests([], 10, [("dev", "a", "x", 3, 0, 200, "t2", None, None, 1)])
    assert store.action_stats()[("dev", "a", "x")] == {
        "requests": 5,
        "errors": 1,
        "timeouts": 1,
        "lastStatus": 200,
        "lastRequestAt": "t2",
        "lastError": "Boom",
        "lastErrorAt": "t1",
    }


# -- transactions ------------------------------------------------------------------------


def test_transaction_rolls_back_wholly(ws: Workspace) -> None:
    store = ws.store
    with pytest.raises(RuntimeError), store.transaction():
        store.put_application(Application("a"))
        with store.transaction():  # a nested one joins the outer
            store.insert_definition(Definition("a", "x", "X", "GET", "x"))
        store.bump_generation()
        raise RuntimeError("crash in the middle")
    assert store.list_applications() == []
    assert store.list_definitions() == []
    assert store.generation() == 0


def test_write_outside_transaction_refused_and_errors_wrapped(ws: Workspace) -> None:
    store = ws.store
    with pytest.raises(StoreError, match="outside a transaction"):
        store.put_application(Application("a"))
    definition = Definition("a", "x", "X", "GET", "x")
    with pytest.raises(StoreError, match="workspace store error"), store.transaction():
        store.put_application(Application("a"))
        store.insert_definition(definition)
        store.insert_definition(definition)  # primary key violation
    assert store.list_applications() == []
    with store.transaction():  # the connection is usable again
        store.put_application(Application("b"))
    assert [a.id for a in store.list_applications()] == ["b"]


def test_concurrent_read_then_write_transactions_are_serialised(
    ws: Workspace, store_url: str
) -> None:
    # Each transaction reads the counter, waits, writes it + 1: without a write lock
    # taken at BEGIN, two would read the same value and one increment would be lost.
    stores = [ws.store, _reopen(ws, store_url).store]
    errors: list[BaseException] = []

    def bump(store: Store) -> None:
        try:
            for _ in range(10):
                with store.transaction():
                    value = store.generation()
                    time.sleep(0.002)
                    store._db.write(
                        "UPDATE meta SET value = ? WHERE key = 'generation'", (str(value + 1),)
                    )
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=bump, args=(s,)) for s in stores for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    assert ws.store.generation() == 40


# -- choosing the store ------------------------------------------------------------------


def test_reopening_migrates_nothing_twice_and_keeps_data(ws: Workspace, store_url: str) -> None:
    _shop(ws)
    ws.deploy("shop", "dev")
    again = _reopen(ws, store_url)
    assert again.keys() == ws.keys()
    assert [d.id for d in again.definitions()] == [d.id for d in ws.definitions()]
    if store_url:
        from notebook_kit.store.pg_schema import PG_MIGRATIONS

        version = ws.store._db.execute("SELECT version FROM schema_version").fetchall()
        assert [tuple(r) for r in version] == [(len(PG_MIGRATIONS),)]


def test_a_store_of_a_newer_schema_is_refused_not_downgraded(ws: Workspace, store_url: str) -> None:
    """A store a newer notebook-kit migrated further, in a way this one cannot read (its
    ``readable_from`` past what this one knows), is refused by this one, naming the
    versions, and keeps its schema version (it used to be written back down on SQLite).
    Past an additive migration only, this one serves it as it is."""
    _shop(ws)
    with ws.store.transaction():
        if store_url:
            ws.store._db.write("UPDATE schema_version SET version = 99")
        else:
            ws.store._db.execute("PRAGMA user_version = 99")
        ws.store._db.write("UPDATE meta SET value = '1' WHERE key = 'readable_from'")
    ws.store.close()
    _reopen(ws, store_url).close()  # additive: read as it is, never downgraded
    with ws.store.transaction():
        ws.store._db.write("UPDATE meta SET value = '99' WHERE key = 'readable_from'")
    ws.store.close()
    with pytest.raises(StoreError, match="its schema version is 99, which needs notebook-kit"):
        _reopen(ws, store_url)
    if not store_url:
        import sqlite3

        with sqlite3.connect(ws.store.path) as conn:
            assert conn.execute("PRAGMA user_version").fetchone()[0] == 99


def test_nodes_opening_an_empty_postgres_store_at_once_migrate_it_once(
    tmp_path: Path, fresh_database: str
) -> None:
    opened: list[Workspace] = []
    errors: list[BaseException] = []

    def open_one(n: int) -> None:
        try:
            opened.append(Workspace(tmp_path / f"node{n}", store=fresh_database))
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=open_one, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    assert len({tuple(ws.keys().items()) for ws in opened}) == 1


def test_change_stamp_moves_with_every_change_another_process_makes(
    ws: Workspace, store_url: str
) -> None:
    """The studio polls ``change_stamp()``: each kind of change, made through another
    workspace on the same store, must move it; a read must not."""
    other = _reopen(ws, store_url)
    seen = [ws.change_stamp()]

    def moved() -> bool:
        stamp = ws.change_stamp()
        changed = stamp != seen[-1]
        seen.append(stamp)
        return changed

    ws.definitions()
    assert not moved()
    other.create_application("shop", "Shop")
    assert moved()
    _shop(other)
    assert moved()
    other.edit("shop", "list", action="res.send(3)")
    assert moved()
    other.deploy("shop", "dev")
    assert moved()
    other.rotate_key("prod")
    assert moved()
    other.set_setting("reload_interval", "2")
    assert moved()
    other.delete("shop", "one")
    assert moved()
    other.rename_application("shop", "The shop")
    assert moved()
    assert len(set(seen)) == len(seen) - 1  # every change gave a stamp never seen before


# -- deployment history: content-addressed, kept within bounds, never backwards -------------


def _count(ws: Workspace, table: str) -> int:
    return int(ws.store._db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])


def test_redeploy_with_one_change_stores_one_more_version(ws: Workspace) -> None:
    _shop(ws)
    ws.deploy("shop", "dev")
    assert _count(ws, "definition_versions") == 3
    ws.edit("shop", "list", action="res.send(10)")
    ws.deploy("shop", "dev")
    ws.deploy("shop", "prod")  # the same versions again: nothing new stored
    assert _count(ws, "definition_versions") == 4
    assert _action(ws, "list") == "res.send(10)"
    first = min(d.id for d in ws.deployments("shop"))
    ws.rollback("shop", "dev", to=first)
    assert _action(ws, "list") == "res.send(1)"


def test_retention_prunes_old_deployments_and_their_versions(ws: Workspace) -> None:
    _shop(ws)
    ws.set_setting("deployments_kept", "2")
    first = ws.deploy("shop", "dev").id
    for n in range(4):
        ws.edit("shop", "list", action=f"res.send({100 + n})")
        ws.deploy("shop", "dev")
    kept = [d.id for d in ws.deployments("shop")]
    assert len(kept) == 2 and first not in kept
    assert _count(ws, "definition_versions") == 2 + 2  # two actions of list, two others
    with pytest.raises(NotFoundError, match="deployments_kept"):
        ws.rollback("shop", "dev", to=first)
    assert _action(ws, "list") == "res.send(103)"  # the refused rollback changed nothing


def _create_and_deploy(home: str, store: str, worker: int, rounds: int, errors: Any) -> None:
    """One of three processes: create a definition, deploy the shared app; repeat."""
    try:
        ws = Workspace(home, store=store)
        for n in range(rounds):
            ws.create("shop", f"w{worker}n{n}", label="x", method="GET",
                      resource=f"w{worker}/n{n}", action="res.body = 1")  # fmt: skip
            ws.deploy("shop", "dev")
    except BaseException as exc:
        errors.put(f"{type(exc).__name__}: {exc}")


def test_concurrent_deploys_never_publish_fewer_definitions(ws: Workspace, store_url: str) -> None:
    """Three processes each saving and deploying one application while a server serves
    it: no error ("database is locked"), no lost write, and no deployment holds fewer
    definitions than one committed before it."""
    _shop(ws)
    ws.deploy("shop", "dev")
    server = BackgroundServer(ws).start()
    context = multiprocessing.get_context("spawn")
    errors = context.Queue()
    rounds = 12
    workers = [
        context.Process(
            target=_create_and_deploy, args=(str(ws.home), store_url, w, rounds, errors)
        )
        for w in range(3)
    ]
    for process in workers:
        process.start()
    try:
        for process in workers:
            process.join(120)
    finally:
        server.stop()
    failures = []
    while not errors.empty():
        failures.append(errors.get())
    assert failures == []
    saved = ws.definitions("shop")
    assert len(saved) == 3 + 3 * rounds
    sizes = []
    for deployment in ws.deployments("shop"):
        found = ws.store.get_deployment(deployment.id)
        assert found is not None
        sizes.append(len(found[1]["definitions"]))
    assert len(sizes) == 1 + 3 * rounds
    assert sizes == sorted(sizes) and sizes[-1] == len(saved), sizes


def test_deploy_description_is_kept_with_the_deployment(ws: Workspace, store_url: str) -> None:
    _shop(ws)
    described = ws.deploy("shop", "dev", description="  first cut for the demo ")
    plain = ws.deploy("shop", "dev")
    assert described.description == "first cut for the demo"
    assert plain.description == ""
    history = _reopen(ws, store_url).deployments("shop")
    assert [(d.id, d.description) for d in history] == [
        (described.id, "first cut for the demo"),
        (plain.id, ""),
    ]
    assert ws.rollback("shop", "dev", to=described.id).description == "first cut for the demo"
    assert history[0].to_dict()["description"] == "first cut for the demo"


@pytest.mark.parametrize("description", ["two\nlines", "x" * 201])
def test_a_bad_deploy_description_is_refused_and_nothing_deployed(
    ws: Workspace, description: str
) -> None:
    _shop(ws)
    with pytest.raises(ValidationError, match="deployment description"):
        ws.deploy("shop", "dev", description=description)
    assert ws.deployments("shop") == []
    assert ws.live("dev") == {}

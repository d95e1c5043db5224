"""Where a server's call runs (``sandbox.pace``): which actions may ever run inline, the
run of fast calls in action processes that promotes one, and the backoff of demotions."""

from __future__ import annotations

from notebook_kit.domain.actions import prepare_action
from notebook_kit.domain.models import Definition
from notebook_kit.sandbox.pace import MAX_BACKOFF, PROMOTE_AFTER, Pace, local_db, pace_for

FAST = (0.0001, 0.0001, 0)  # wall, cpu, waits of a fast call in an action process


def _names(action: str, functions: str = "") -> frozenset[str]:
    definition = Definition("app", "api", "A", "GET", "a", action=action, functions=functions)
    return prepare_action(definition).names


def test_names_read_anywhere_in_the_definition_count_and_nothing_runs() -> None:
    helper = "def helper():\n    return db.query('SELECT 1')\n"
    assert "db" in _names("res.body = helper()", helper)  # through a user function
    assert "db" in _names("res.body = db")
    assert "db" not in _names("res.body = 1 + 1", "def plain():\n    return 2\n")
    # compiling runs no user code: a top level that never ends is only compiled
    assert "sleep" in _names("res.body = 1", "import time\nwhile True:\n    time.sleep(1)\n")


def test_each_kind_of_action_gets_its_pace() -> None:
    local = local_db({"database_url": ""})
    assert local and local_db({"database_url": "sqlite:///x.db"})
    reads, pure = _names("res.body = db.query('SELECT 1')"), _names("res.body = 1 + 1")
    assert pace_for(reads, False, local).eligible  # inline once proven
    assert pace_for(pure, False, local).eligible
    for waits in (
        "http.get('u')",
        "fn.getUsers()",
        "fn.sendMail({})",
        "fn.getPresignedUrl('x')",
    ):  # the network, the trusted side
        assert not pace_for(_names(f"res.body = {waits}"), False, local).eligible, waits
    assert not pace_for(_names("x = 1", "def f():\n    return http\n"), False, local).eligible
    assert not pace_for(pure, True, local).eligible  # async: never
    remote = local_db({"database_url": "postgresql+psycopg://h/db"})
    assert not pace_for(reads, False, remote).eligible  # db over the network
    assert pace_for(pure, False, remote).eligible


def test_a_run_of_fast_calls_that_never_waited_promotes() -> None:
    pace = Pace()
    ineligible = Pace(eligible=False)
    for _ in range(PROMOTE_AFTER * 4):
        ineligible.pool_call_ended(*FAST)
    assert not ineligible.inline
    for spoiler in ((0.5, 0.0001, 0), (0.001, 0.0001, 1), (0.02, 0.01, 0)):
        for _ in range(PROMOTE_AFTER - 1):
            pace.pool_call_ended(*FAST)
        pace.pool_call_ended(*spoiler)  # slow, waited once, or computed too long: again
        assert not pace.inline
    for _ in range(PROMOTE_AFTER - 1):
        pace.pool_call_ended(*FAST)
    assert not pace.inline
    pace.pool_call_ended(*FAST)
    assert pace.inline


def test_demotion_doubles_the_run_needed_up_to_a_cap_and_quarantine_ends_it() -> None:
    pace = Pace()
    needed = []
    for _ in range(MAX_BACKOFF + 3):
        calls = 0
        while not pace.inline:
            pace.pool_call_ended(*FAST)
            calls += 1
        needed.append(calls)
        pace.demote()
    cap = PROMOTE_AFTER << MAX_BACKOFF
    assert needed == [min(PROMOTE_AFTER << i, cap) for i in range(MAX_BACKOFF + 3)]
    pace.demote()  # demoting what runs in processes changes nothing
    assert pace.demotions == MAX_BACKOFF + 3
    pace.quarantine()
    for _ in range(cap * 2):
        pace.pool_call_ended(*FAST)
    assert not pace.inline

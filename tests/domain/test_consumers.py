"""The consumers' pure rules: names, limits as people write them, expiry, keys and
digests, the UTC calendar of quota periods and the RateLimit header values."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from notebook_kit.domain.consumers import (
    KEY_PREFIX_LENGTH,
    TICKS_PER_WINDOW,
    Consumer,
    ConsumerKey,
    Quota,
    Rate,
    check_consumer_name,
    key_digest,
    new_consumer_key,
    parse_expiry,
    parse_quota,
    parse_rate,
    period_bounds,
    stage_consumer,
)
from notebook_kit.domain.models import Stage
from notebook_kit.errors import ValidationError


def _at(text: str) -> float:
    """Epoch seconds of a UTC time written as ISO."""
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


# -- names ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["alice", "A", "team-7", "svc.billing", "x_y", "9" * 64])
def test_consumer_name_accepted(name: str) -> None:
    assert check_consumer_name(name) == name


@pytest.mark.parametrize("name", ["", "-x", ".x", "stage:dev", "a b", "é", "x" * 65, "a/b"])
def test_consumer_name_refused(name: str) -> None:
    with pytest.raises(ValidationError, match="consumer name"):
        check_consumer_name(name)


def test_stage_consumer_names_the_builtin_consumer() -> None:
    assert stage_consumer("dev") == "stage:dev"
    assert stage_consumer(Stage.PROD) == "stage:prod"
    with pytest.raises(ValidationError):  # no user consumer can take a stage's name
        check_consumer_name(stage_consumer("dev"))


# -- rate ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "burst", "expected"),
    [
        ("100/s", None, Rate(100, 1, 100)),
        ("100/s", 10, Rate(100, 1, 10)),
        (" 5 / second ", None, Rate(5, 1, 5)),
        ("1/sec", 1, Rate(1, 1, 1)),
        ("600/min", None, Rate(600, 60, 600)),
        ("600/minute", 60, Rate(600, 60, 60)),
        (None, None, None),
        ("", None, None),
    ],
)
def test_parse_rate(text: str | None, burst: int | None, expected: Rate | None) -> None:
    assert parse_rate(text, burst) == expected


@pytest.mark.parametrize(
    ("text", "burst", "message"),
    [
        ("100", None, "rate '100' is not valid"),
        ("100/h", None, "is not valid"),
        ("100/day", None, "is not valid"),
        ("-1/s", None, "is not valid"),
        ("1.5/s", None, "is not valid"),
        ("0/s", None, "between 1 and"),
        ("10000000000000/s", None, "between 1 and"),
        ("10/s", 0, "burst 0 is not valid"),
        ("10/s", 11, "burst 11 is not valid: a whole number from 1 to 10"),
        (None, 5, "a burst needs a rate"),
    ],
)
def test_parse_rate_refused(text: str | None, burst: int | None, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        parse_rate(text, burst)


def test_rate_text_ticks_and_policy() -> None:
    per_second, per_minute = Rate(100, 1, 20), Rate(600, 60, 600)
    assert (per_second.text(), per_minute.text()) == ("100/s", "600/min")
    assert per_second.tick_seconds == pytest.approx(1 / TICKS_PER_WINDOW)
    assert per_minute.tick_seconds == pytest.approx(6.0)
    assert per_second.policy() == '"rate";q=100;w=1'
    assert per_minute.policy() == '"rate";q=600;w=60'


# -- quota and its UTC calendar -----------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("5000/day", Quota(5000, "day")),
        (" 7 / week ", Quota(7, "week")),
        ("1/month", Quota(1, "month")),
        (None, None),
        ("", None),
    ],
)
def test_parse_quota(text: str | None, expected: Quota | None) -> None:
    assert parse_quota(text) == expected


@pytest.mark.parametrize("text", ["100", "100/year", "100/d", "0/day", "x/day", "100/s"])
def test_parse_quota_refused(text: str) -> None:
    with pytest.raises(ValidationError, match=r"quota|between 1"):
        parse_quota(text)


@pytest.mark.parametrize(
    ("period", "moment", "key"),
    [
        ("day", "2026-11-27T23:59:59.999", "2026-11-27"),
        ("day", "2026-11-28T00:00:00", "2026-11-28"),
        # ISO weeks from Monday: Sunday 29 November closes week 48
        ("week", "2026-11-29T23:59:59.999", "2026-W48"),
        ("week", "2026-11-30T00:00:00", "2026-W49"),
        # 1 January 2027 is a Friday: still the 53rd week of 2026 (ISO year)
        ("week", "2027-01-01T12:00:00", "2026-W53"),
        ("week", "2027-01-04T00:00:00", "2027-W01"),
        ("month", "2026-12-31T23:59:59.999", "2026-12"),
        ("month", "2027-01-01T00:00:00", "2027-01"),
        ("month", "2028-02-29T12:00:00", "2028-02"),
    ],
)
def test_quota_period_keys_are_utc_calendar(period: str, moment: str, key: str) -> None:
    assert Quota(10, period).key(_at(moment)) == key


@pytest.mark.parametrize(
    ("period", "moment", "start", "end"),
    [
        ("day", "2026-11-27T15:30:00", "2026-11-27T00:00:00", "2026-11-28T00:00:00"),
        ("week", "2026-11-29T23:00:00", "2026-11-23T00:00:00", "2026-11-30T00:00:00"),
        ("week", "2026-11-30T00:00:00", "2026-11-30T00:00:00", "2026-12-07T00:00:00"),
        ("week", "2027-01-01T00:00:00", "2026-12-28T00:00:00", "2027-01-04T00:00:00"),
        ("month", "2026-12-15T00:00:00", "2026-12-01T00:00:00", "2027-01-01T00:00:00"),
        ("month", "2027-02-10T00:00:00", "2027-02-01T00:00:00", "2027-03-01T00:00:00"),
        ("month", "2028-02-29T23:59:59", "2028-02-01T00:00:00", "2028-03-01T00:00:00"),
    ],
)
def test_period_bounds(period: str, moment: str, start: str, end: str) -> None:
    assert period_bounds(period, _at(moment)) == (_at(start), _at(end))


@given(
    st.sampled_from(["day", "week", "month"]),
    st.floats(min_value=_at("1971-01-01T00:00:00"), max_value=_at("2099-12-31T00:00:00")),
)
def test_period_bounds_hold_the_moment_and_one_key(period: str, at: float) -> None:
    start, end = period_bounds(period, at)
    assert start <= at < end
    quota = Quota(1, period)
    assert quota.key(start) == quota.key(at) == quota.key(end - 0.001) != quota.key(end)


def test_a_moment_just_before_midnight_stays_in_its_day() -> None:
    """Less than half a microsecond before midnight: not rounded into the next day."""
    at = 4102358399.9999995  # 2099-12-30T23:59:59.9999995Z
    assert Quota(1, "day").key(at) == "2099-12-30"
    assert period_bounds("day", at) == (_at("2099-12-30T00:00:00"), _at("2099-12-31T00:00:00"))


@pytest.mark.parametrize(
    ("quota", "moment", "policy"),
    [
        (Quota(1000, "day"), "2026-11-27T10:00:00", '"quota";q=1000;w=86400'),
        (Quota(5, "week"), "2026-11-27T10:00:00", '"quota";q=5;w=604800'),
        (Quota(5, "month"), "2027-02-03T10:00:00", f'"quota";q=5;w={28 * 86400}'),
        (Quota(5, "month"), "2026-12-03T10:00:00", f'"quota";q=5;w={31 * 86400}'),
    ],
)
def test_quota_policy_window_is_the_period_length(quota: Quota, moment: str, policy: str) -> None:
    assert quota.policy(_at(moment)) == policy


def test_policy_header_value_joins_rate_and_quota() -> None:
    rate, quota = parse_rate("100/s"), parse_quota("1000/day")
    assert rate is not None and quota is not None
    header = f"{rate.policy()}, {quota.policy(_at('2026-11-27T10:00:00'))}"
    assert header == '"rate";q=100;w=1, "quota";q=1000;w=86400'


# -- expiry --------------------------------------------------------------------------------

NOW = _at("2026-11-27T10:00:00")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("45s", NOW + 45),
        ("30m", NOW + 1800),
        ("12h", NOW + 12 * 3600),
        (" 90d ", NOW + 90 * 86400),
        ("2w", NOW + 14 * 86400),
        ("2027-01-31", _at("2027-01-31T00:00:00")),
        ("2027-01-31T12:00:00Z", _at("2027-01-31T12:00:00")),
        ("2027-01-31T12:00:00+02:00", _at("2027-01-31T10:00:00")),
        (None, None),
        ("", None),
    ],
)
def test_parse_expiry(text: str | None, expected: float | None) -> None:
    assert parse_expiry(text, NOW) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("0d", "must be positive"),
        ("soon", "is not valid"),
        ("30", "is not valid"),
        ("1y", "is not valid"),
        ("2026-11-27", "in the past"),
        ("2026-11-27T10:00:00Z", "in the past"),
        ("2027-13-01", "is not valid"),
    ],
)
def test_parse_expiry_refused(text: str, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        parse_expiry(text, NOW)


def test_key_expired_at_its_moment() -> None:
    key = ConsumerKey("nk_abcde", "2026-11-27T10:00:00Z", expires_at=NOW + 10)
    assert not key.is_expired(NOW + 9.999)
    assert key.is_expired(NOW + 10)
    assert not ConsumerKey("nk_abcde", "").is_expired(NOW + 10**9)
    assert key.to_dict()["expires_at"] == "2026-11-27T10:00:10Z"


# -- keys ----------------------------------------------------------------------------------


def test_new_keys_are_random_and_stored_as_sha256() -> None:
    keys = {new_consumer_key() for _ in range(200)}
    assert len(keys) == 200
    for key in keys:
        assert key.startswith("nk_") and len(key) == 43
        assert key.replace("-", "").replace("_", "").isalnum()
        digest = key_digest(key)
        assert digest == hashlib.sha256(key.encode()).hexdigest() and key not in digest
    assert KEY_PREFIX_LENGTH == 8  # "nk_" and five characters


def test_consumer_scope_and_to_dict_never_hold_a_key() -> None:
    key = new_consumer_key()
    consumer = Consumer(
        "alice",
        apps=("shop",),
        stages=("dev",),
        rate=Rate(10, 1, 2),
        quota=Quota(100, "day"),
        keys=(ConsumerKey(key[:KEY_PREFIX_LENGTH], "2026-11-27T10:00:00Z"),),
    )
    assert consumer.may_call("shop", "dev")
    assert not consumer.may_call("shop", "prod") and not consumer.may_call("other", "dev")
    assert Consumer("all").may_call("any", "prod") and not Consumer("all").limited
    assert consumer.limited
    shown = consumer.to_dict()
    assert key not in str(shown) and key_digest(key) not in str(shown)
    assert shown["rate"] == "10/s" and shown["burst"] == 2 and shown["quota"] == "100/day"
    assert shown["keys"][0]["prefix"] == key[:8]

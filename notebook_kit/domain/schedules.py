"""Schedules: an application's actions run on a clock (docs/schedules.md is the contract).

A ``Schedule`` belongs to one application and is named there. It runs one of the
application's definitions (``definition``, an API ID) at every tick of a cron expression
(``cron``: five fields, or six with seconds first) read in an IANA time zone
(``timezone``), and says what a tick does while the previous run still runs
(``overlap``: ``skip`` records it as skipped, ``queue`` runs it once the previous ends).

``Cron`` reads the expression: ``*`` (``?`` alike), lists ``1,15``, ranges ``9-17``, steps
``*/5`` ``10-50/10`` ``7/15``, month names ``JAN``-``DEC`` and day names ``SUN``-``SAT`` (0
and 7 are Sunday), the macros ``@yearly`` ``@monthly`` ``@weekly`` ``@daily``
``@hourly``. As in Vixie cron, a day of the month and a day of the week both restricted
match either one. ``Cron.next_tick`` is the first tick after an instant, in UTC: ticks
are the instants whose local time matches. Where the clocks go forward, the skipped local
times have no tick; where they go back, a repeated local time ticks once (its first
occurrence) unless the hour field is every hour, whose ticks follow real time through
both occurrences.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from ..errors import ValidationError
from .models import Definition, validate_id

__all__ = [
    "OVERLAPS",
    "Cron",
    "Schedule",
    "check_targets",
    "parse_cron",
    "parse_timezone",
    "validate_schedule_name",
]

OVERLAPS = ("skip", "queue")
_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_MACROS = {
    "@yearly": "0 0 0 1 1 *",
    "@annually": "0 0 0 1 1 *",
    "@monthly": "0 0 0 1 * *",
    "@weekly": "0 0 0 * * 0",
    "@daily": "0 0 0 * * *",
    "@midnight": "0 0 0 * * *",
    "@hourly": "0 0 * * * *",
}
_MONTHS = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"]
_DAYS = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"]
# (name, lowest, highest, names whose index + offset is the value)
_FIELDS: tuple[tuple[str, int, int, Sequence[str], int], ...] = (
    ("second", 0, 59, (), 0),
    ("minute", 0, 59, (), 0),
    ("hour", 0, 23, (), 0),
    ("day of month", 1, 31, (), 0),
    ("month", 1, 12, _MONTHS, 1),
    ("day of week", 0, 7, _DAYS, 0),
)
_HORIZON = timedelta(days=5 * 366)  # a tick further away than this is no tick
_WINDOW = timedelta(days=1)  # the stretch searched under one UTC offset at a time


def _cron_error(expression: str, why: str) -> ValidationError:
    return ValidationError(f"cron expression {expression!r}: {why}", field="cron")


def _value(text: str, field: tuple[str, int, int, Sequence[str], int], expr: str) -> int:
    name, low, high, names, offset = field
    upper = text.upper()
    if upper in names:
        return names.index(upper) + offset
    if not text.isdigit():
        raise _cron_error(expr, f"{name} {text!r} is not a number from {low} to {high}")
    value = int(text)
    if not low <= value <= high:
        raise _cron_error(expr, f"{name} {value} is out of range {low}-{high}")
    return value


def _parse_field(
    text: str, field: tuple[str, int, int, Sequence[str], int], expr: str
) -> frozenset[int]:
    name, low, high, _, _ = field
    values: set[int] = set()
    for part in text.split(","):
        if not part:
            raise _cron_error(expr, f"{name} {text!r} has an empty list item")
        base, slash, step_text = part.partition("/")
        step = 1
        if slash:
            if not step_text.isdigit() or int(step_text) == 0:
                raise _cron_error(expr, f"{name} step {step_text!r} must be a whole number over 0")
            step = int(step_text)
        if base in ("*", "?"):
            first, last = low, high
        elif "-" in base:
            a, _, b = base.partition("-")
            first, last = _value(a, field, expr), _value(b, field, expr)
            if first > last:
                raise _cron_error(expr, f"{name} range {base!r} runs backwards")
        else:
            first = _value(base, field, expr)
            last = high if slash else first
        values.update(range(first, last + 1, step))
    return frozenset(values)


@dataclass(frozen=True)
class Cron:
    """A parsed cron expression (``parse_cron``); ``text`` is what was written."""

    text: str
    seconds: tuple[int, ...]
    minutes: tuple[int, ...]
    hours: tuple[int, ...]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 Sunday ... 6 Saturday
    days_restricted: bool
    weekdays_restricted: bool

    @property
    def every_hour(self) -> bool:
        """True if the hour field is every hour (its ticks follow real time over DST)."""
        return len(self.hours) == 24

    def _day_matches(self, day: datetime) -> bool:
        in_month = day.day in self.days
        in_week = (day.isoweekday() % 7) in self.weekdays
        if self.days_restricted and self.weekdays_restricted:
            return in_month or in_week
        return in_month and in_week

    def _next_local(self, t: datetime, end: datetime) -> datetime | None:
        """The first local (naive) time at or after ``t`` and before ``end`` that matches."""
        while t < end:
            if t.month not in self.months:
                year, month = (t.year + 1, 1) if t.month == 12 else (t.year, t.month + 1)
                t = datetime(year, month, 1)
                continue
            if not self._day_matches(t):
                t = datetime(t.year, t.month, t.day) + timedelta(days=1)
                continue
            found = _at_or_after(self.hours, t.hour, 24)
            if found != t.hour:
                t = datetime(t.year, t.month, t.day) + timedelta(hours=found)
                continue
            found = _at_or_after(self.minutes, t.minute, 60)
            if found != t.minute:
                t = t.replace(minute=0, second=0) + timedelta(minutes=found)
                continue
            found = _at_or_after(self.seconds, t.second, 60)
            if found != t.second:
                t = t.replace(second=0) + timedelta(seconds=found)
                continue
            return t
        return None

    def next_tick(self, after: datetime, zone: tzinfo = UTC) -> datetime | None:
        """The first tick strictly after ``after`` (an aware datetime), as an aware UTC
        datetime on a whole second, with the expression read in ``zone``; None if there
        is none within five years (``0 0 30 2 *``)."""
        start = after.astimezone(UTC).replace(microsecond=0) + timedelta(seconds=1)
        limit = start + _HORIZON
        while start < limit:
            offset = start.astimezone(zone).utcoffset() or timedelta(0)
            end = _same_offset_until(zone, start, offset, min(start + _WINDOW, limit))
            local_end = (end + offset).replace(tzinfo=None)
            local = self._next_local((start + offset).replace(tzinfo=None), local_end)
            while local is not None:
                tick = (local - offset).replace(tzinfo=UTC)
                if self.every_hour or _first_occurrence(local, tick, zone):
                    return tick
                local = self._next_local(local + timedelta(seconds=1), local_end)
            start = end
        return None

    def ticks(self, after: datetime, until: datetime, zone: tzinfo = UTC) -> list[datetime]:
        """Every tick strictly after ``after`` and at or before ``until`` (UTC)."""
        found: list[datetime] = []
        tick = self.next_tick(after, zone)
        while tick is not None and tick <= until:
            found.append(tick)
            tick = self.next_tick(tick, zone)
        return found


def _at_or_after(allowed: tuple[int, ...], value: int, past: int) -> int:
    """The first allowed value at or after ``value``; ``past`` (one over the field's
    range) after the last, so the caller moves on to the next larger unit."""
    index = bisect.bisect_left(allowed, value)
    return allowed[index] if index < len(allowed) else past


def _same_offset_until(zone: tzinfo, start: datetime, offset: timedelta, end: datetime) -> datetime:
    """The first instant after ``start`` (before ``end``) where ``zone``'s UTC offset is
    no longer ``offset``; ``end`` if none. Hour by hour, then to the second."""
    if zone is UTC:
        return end
    probe = start
    while probe < end:
        ahead = min(probe + timedelta(hours=1), end)
        if ahead.astimezone(zone).utcoffset() != offset:
            low, high = probe, ahead  # the offset is ``offset`` at low, not at high
            while high - low > timedelta(seconds=1):
                middle = low + (high - low) / 2
                middle = middle.replace(microsecond=0)
                if middle <= low:
                    break
                if middle.astimezone(zone).utcoffset() == offset:
                    low = middle
                else:
                    high = middle
            return high
        probe = ahead
    return end


def _first_occurrence(local: datetime, tick: datetime, zone: tzinfo) -> bool:
    """True unless ``tick`` is the second occurrence of a repeated local time."""
    first = local.replace(tzinfo=zone, fold=0).astimezone(UTC)
    return first == tick


def parse_cron(expression: object) -> Cron:
    """Read a cron expression (see the module docstring); ValidationError naming the
    field at fault."""
    if not isinstance(expression, str) or not expression.strip():
        raise ValidationError(
            "cron expression must be text such as '*/5 * * * *' or '0 0 2 * * *'",
            field="cron",
        )
    text = " ".join(expression.split())
    spelled = _MACROS.get(text.lower(), text)
    parts = spelled.split(" ")
    if text.startswith("@") and text.lower() not in _MACROS:
        known = ", ".join(_MACROS)
        raise _cron_error(text, f"unknown macro; use one of {known}")
    if len(parts) == 5:
        parts = ["0", *parts]
    if len(parts) != 6:
        raise _cron_error(
            text,
            f"has {len(parts)} fields; give 5 (minute hour day month weekday) or 6 (second first)",
        )
    fields = [_parse_field(p, f, text) for p, f in zip(parts, _FIELDS, strict=True)]
    weekdays = frozenset(d % 7 for d in fields[5])
    cron = Cron(
        text=text,
        seconds=tuple(sorted(fields[0])),
        minutes=tuple(sorted(fields[1])),
        hours=tuple(sorted(fields[2])),
        days=fields[3],
        months=fields[4],
        weekdays=weekdays,
        days_restricted=parts[3] not in ("*", "?"),
        weekdays_restricted=parts[5] not in ("*", "?"),
    )
    if cron.next_tick(datetime(2000, 1, 1, tzinfo=UTC)) is None:
        raise _cron_error(text, "never ticks (no such day in any month)")
    return cron


def parse_timezone(name: object) -> ZoneInfo:
    """An IANA time zone by name (``Europe/Paris``, ``UTC``); ValidationError otherwise."""
    if not isinstance(name, str) or not name.strip():
        raise ValidationError(
            "time zone must be an IANA name such as 'UTC' or 'Europe/Paris'", field="timezone"
        )
    try:
        return ZoneInfo(name.strip())
    except (ZoneInfoNotFoundError, ValueError):
        raise ValidationError(
            f"time zone {name!r} is not an IANA time zone (such as 'UTC' or 'Europe/Paris')",
            field="timezone",
        ) from None


def validate_schedule_name(value: object) -> str:
    """A schedule's name: 1 to 64 of A-Z a-z 0-9 _ - (it names a file in a commit)."""
    if not isinstance(value, str) or not _NAME.fullmatch(value):
        raise ValidationError(
            f"schedule name {value!r} must be 1 to 64 characters of A-Z, a-z, 0-9, '_' and '-'",
            field="name",
        )
    return value


@dataclass(frozen=True)
class Schedule:
    """One schedule of an application (see the module docstring)."""

    app: str
    name: str
    definition: str
    cron: str
    timezone: str = "UTC"
    overlap: str = "skip"

    def __post_init__(self) -> None:
        validate_id(self.app, "application ID")
        validate_schedule_name(self.name)
        validate_id(self.definition)
        object.__setattr__(self, "cron", parse_cron(self.cron).text)
        object.__setattr__(self, "timezone", parse_timezone(self.timezone).key)
        if self.overlap not in OVERLAPS:
            raise ValidationError(
                f"overlap must be 'skip' or 'queue', not {self.overlap!r}", field="overlap"
            )

    @property
    def parsed(self) -> Cron:
        """The cron expression, read."""
        return parse_cron(self.cron)

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)

    def next_tick(self, after: datetime) -> datetime | None:
        """The first tick strictly after ``after`` (UTC)."""
        return self.parsed.next_tick(after, self.zone)

    def to_dict(self) -> dict[str, Any]:
        return {
            "app": self.app,
            "name": self.name,
            "definition": self.definition,
            "cron": self.cron,
            "timezone": self.timezone,
            "overlap": self.overlap,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Schedule:
        """A schedule from ``to_dict``'s form; ValidationError for a missing or bad field."""
        if not isinstance(data, Mapping):
            raise ValidationError("a schedule must be an object", field="schedules")
        for key in ("app", "name", "definition", "cron"):
            if key not in data:
                raise ValidationError(f"a schedule needs {key!r}", field=key)
        return cls(
            app=data["app"],
            name=data["name"],
            definition=data["definition"],
            cron=data["cron"],
            timezone=data.get("timezone", "UTC"),
            overlap=data.get("overlap", "skip"),
        )


def check_targets(schedules: Sequence[Schedule], definitions: Sequence[Definition]) -> None:
    """Each schedule must run one of ``definitions`` that takes no path parameters (a
    scheduled run has no caller to give them); ValidationError naming the first that
    does not."""
    by_id = {d.id: d for d in definitions}
    for schedule in schedules:
        target = by_id.get(schedule.definition)
        if target is None:
            raise ValidationError(
                f"schedule {schedule.name!r} runs definition {schedule.definition!r}, which "
                f"application {schedule.app!r} does not have",
                field="definition",
            )
        if target.path_parameters:
            raise ValidationError(
                f"schedule {schedule.name!r} runs {schedule.definition!r}, whose resource has "
                f"path parameters ({{{target.path_parameters[0]}}}); a scheduled run has no "
                "caller to give them: schedule a definition without any",
                field="definition",
            )

"""The one way notebook_kit writes a point in time: ISO 8601 UTC to the millisecond.

``2026-11-23T10:47:00.123Z`` everywhere: stored rows, the request log, file listings,
reset-token expiries. The text sorts as the time does.
"""

from __future__ import annotations

import time
from math import modf

__all__ = ["iso_time", "now"]

_gmtime, _strftime, _time = time.gmtime, time.strftime, time.time

# The last whole second written and its text. Log entries come in runs within one second,
# so most calls skip gmtime/strftime (about half the cost of a call). A tuple is swapped
# in whole, so threads at worst recompute a second's text.
_last_second: tuple[float, str] = (-1.0, "")


def iso_time(epoch: float) -> str:
    """Seconds since the epoch as ISO 8601 UTC text, to the millisecond, ending in ``Z``.

    The same text as ``datetime.fromtimestamp(epoch, UTC).isoformat(timespec=
    "milliseconds")`` with ``Z`` for ``+00:00``: rounded to the microsecond (half to even),
    then cut to the millisecond, so ``1700000000.123`` reads ``...:20.123Z``.
    """
    global _last_second
    fraction, whole = modf(epoch)
    micro = round(fraction * 1e6)
    if micro >= 1_000_000:
        whole += 1.0
        micro -= 1_000_000
    elif micro < 0:  # before 1970: the fraction counts back from the next second
        whole -= 1.0
        micro += 1_000_000
    second, stamp = _last_second
    if second != whole:
        stamp = _strftime("%Y-%m-%dT%H:%M:%S", _gmtime(whole))
        _last_second = (whole, stamp)
    return f"{stamp}.{micro // 1000:03d}Z"


def now() -> str:
    """The current time as ISO 8601 UTC text (what the store keeps)."""
    return iso_time(_time())

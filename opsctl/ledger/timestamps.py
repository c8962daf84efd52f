"""Times in the ledger: stored as ISO-8601 UTC text ('2026-11-30T10:00:00Z'), which sorts as
time in any database; read from whatever users type (a date, a time, with or without zone)."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import overload

from opsctl.errors import InputError

Moment = str | datetime  # a time as users type it, or as a datetime
_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
# The years a ledger time may fall in. A GPU rack was handed over, failed or was repaired in
# neither 0026 nor 9999: a time outside is a typo, refused before it enters the ledger, where
# it would break every statistic and export after it (and `%Y` writes year 26 as "26").
FIRST_YEAR, LAST_YEAR = 2000, 2100


def utc_now() -> datetime:
    return datetime.now(timezone.utc).replace(microsecond=0)


def parse_time(value: Moment, what: str = "time") -> datetime:
    """A timezone-aware UTC datetime from text or a datetime; a time without zone is UTC."""
    moment: datetime | None
    if isinstance(value, datetime):
        moment = value
    else:
        text = str(value).strip()
        try:
            moment = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text)
        except ValueError:
            raise InputError(f"{what}: not a time: {text!r} (use 2026-11-30 or 2026-11-30T14:05:00Z)") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    try:
        moment = moment.astimezone(timezone.utc).replace(microsecond=0)
    except OverflowError:  # 0001-01-01T00:00+01:00 is before year 1 in UTC
        moment = None
    if moment is None or not FIRST_YEAR <= moment.year <= LAST_YEAR:
        raise InputError(f"{what}: {value} is not between the years {FIRST_YEAR} and {LAST_YEAR}; a typo? "
                         "(use 2026-11-30 or 2026-11-30T14:05:00Z)".lstrip(": "))
    return moment


@overload
def stored(value: Moment, what: str = ...) -> str: ...
@overload
def stored(value: None, what: str = ...) -> None: ...


def stored(value: Moment | None, what: str = "time") -> str | None:
    """The ledger's text form of a time (None stays None)."""
    return None if value is None else parse_time(value, what).strftime(_FORMAT)


def from_epoch(seconds: float) -> str:
    """The ledger's text form of a moment given in seconds since the epoch."""
    return stored(datetime.fromtimestamp(seconds, timezone.utc))


def days_between(start: Moment, end: Moment) -> float:
    return (parse_time(end) - parse_time(start)).total_seconds() / 86400.0


def hours_between(start: Moment, end: Moment) -> float:
    return days_between(start, end) * 24.0

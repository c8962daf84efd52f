"""Times in the ledger: stored as ISO-8601 UTC text ('2026-11-30T10:00:00Z'), which sorts as
time in any database; read from whatever users type (a date, a time, with or without zone)."""

from datetime import datetime, timezone

from opsctl.errors import InputError

_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


def utc_now():
    return datetime.now(timezone.utc).replace(microsecond=0)


def parse_time(value, what="time"):
    """A timezone-aware UTC datetime from text or a datetime; a time without zone is UTC."""
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
    return moment.astimezone(timezone.utc).replace(microsecond=0)


def stored(value, what="time"):
    """The ledger's text form of a time (None stays None)."""
    return None if value is None else parse_time(value, what).strftime(_FORMAT)


def from_epoch(seconds):
    """The ledger's text form of a moment given in seconds since the epoch."""
    return stored(datetime.fromtimestamp(seconds, timezone.utc))


def days_between(start, end):
    return (parse_time(end) - parse_time(start)).total_seconds() / 86400.0


def hours_between(start, end):
    return days_between(start, end) * 24.0

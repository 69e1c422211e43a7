"""The clock: ``GITVAULT_NOW`` when set, else the system clock; ISO helpers.

Every time rule uses :func:`now`; timestamps written are ISO 8601 UTC with
``Z`` and milliseconds (the same shape as JavaScript's ``toISOString``).
"""

from __future__ import annotations

import os
import re
from datetime import datetime, timedelta, timezone

from gitvault.errors import InvalidInput

_FAST_UTC: list[re.Pattern[str]] = []  # compiled on first use (record-run never needs it)


def parse_iso(text: str) -> datetime:
    """Parse an ISO 8601 timestamp into an aware UTC datetime.

    A timestamp without a zone is taken as UTC. Raises InvalidInput naming the text.
    """
    if not isinstance(text, str) or not text:
        raise InvalidInput(f"not an ISO 8601 timestamp: {text!r}")
    raw = text.strip()
    if raw.endswith(("Z", "z")):
        raw = raw[:-1] + "+00:00"
    # Python 3.10's fromisoformat accepts only 0, 3 or 6 fractional digits.
    m = re.match(r"^(.*T\d\d:\d\d:\d\d)\.(\d+)(.*)$", raw)
    if m:
        raw = f"{m.group(1)}.{(m.group(2) + '000000')[:6]}{m.group(3)}"
    try:
        parsed = datetime.fromisoformat(raw)
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=timezone.utc)
        return parsed.astimezone(timezone.utc)
    except ValueError:
        raise InvalidInput(f"not an ISO 8601 timestamp: {text!r}") from None
    except OverflowError:  # in UTC it falls outside the years 1-9999
        raise InvalidInput(f"timestamp out of range (years 1 to 9999 UTC): {text!r}") from None


# The calendar's edges, as aware UTC datetimes: date arithmetic saturates there.
EARLIEST = datetime.min.replace(tzinfo=timezone.utc)
LATEST = datetime.max.replace(tzinfo=timezone.utc)


def shift(moment: datetime, seconds: float) -> datetime:
    """``moment`` plus ``seconds`` (negative: minus), saturating at the calendar's
    edges instead of raising OverflowError: a deadline 24 h after 9999-12-31T23:59:59Z
    is the last representable moment, so it never passes, and nothing crashes."""
    try:
        return moment + timedelta(seconds=seconds)
    except OverflowError:
        return LATEST if seconds > 0 else EARLIEST


def older_than(moment: datetime, reference: datetime, seconds: float) -> bool:
    """Whether more than ``seconds`` passed from ``moment`` to ``reference`` (any
    sizes: the difference of two datetimes never overflows; a huge limit is a float)."""
    return (reference - moment).total_seconds() > seconds


def now() -> datetime:
    """The current time: ``GITVAULT_NOW`` (ISO 8601) if set, else the system clock."""
    fixed = os.environ.get("GITVAULT_NOW")
    if fixed:
        try:
            return parse_iso(fixed)
        except InvalidInput:
            raise InvalidInput(f"GITVAULT_NOW is not an ISO 8601 timestamp: {fixed!r}") from None
    return datetime.now(timezone.utc)


def iso(moment: datetime) -> str:
    """Format as ISO 8601 UTC with milliseconds and ``Z``."""
    utc = moment.astimezone(timezone.utc).replace(tzinfo=None)
    return utc.isoformat(timespec="milliseconds") + "Z"  # years below 1000 zero-padded



def now_seconds() -> str:
    """Now as ISO 8601 UTC to the second (``created``/``updated`` of a skill)."""
    return now().astimezone(timezone.utc).replace(tzinfo=None).isoformat(timespec="seconds") + "Z"


def ts_key(text: str) -> str:
    """A sort key for a timestamp: canonical UTC text, comparable as strings.

    ``2026-01-01T00:00:00Z`` and ``2026-01-01T00:00:00.000Z`` get the same key.
    Raises InvalidInput for text that is not a timestamp.
    """
    if not _FAST_UTC:
        _FAST_UTC.append(re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?Z$"))
    m = _FAST_UTC[0].match(text) if isinstance(text, str) else None
    if m:
        return f"{m.group(1)}.{((m.group(2) or '') + '000000')[:6]}"
    return parse_iso(text).replace(tzinfo=None).isoformat(timespec="microseconds")

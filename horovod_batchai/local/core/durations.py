"""Durations as Batch AI spells them: ISO 8601 on the wire (``P7D``, ``PT1H30M``), and the .NET
TimeSpan (``7.00:00:00``) that the 2018-05-01 schemas use for their defaults. The service reads
either at job creation and stores ISO 8601; the node runner reads what was stored."""
from __future__ import annotations

import re
from typing import Optional

__all__ = ["parse_duration", "format_duration"]

_ISO_DURATION = re.compile(r"^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?\Z")
_DOTNET_TIMESPAN = re.compile(r"^(?:(\d+)\.)?(\d{1,2}):(\d{2}):(\d{2}(?:\.\d+)?)\Z")


def parse_duration(text: str) -> Optional[float]:
    """Seconds in an ISO 8601 duration (``P7D``, ``PT1H30M``) or a .NET TimeSpan (``7.00:00:00``,
    the spec's own default spelling), or None if it is neither."""
    m = _ISO_DURATION.match(text)
    if m and text not in ("P", "PT") and not text.endswith("T"):
        d, h, mi, s = m.groups()
        return int(d or 0) * 86400 + int(h or 0) * 3600 + int(mi or 0) * 60 + float(s or 0)
    m = _DOTNET_TIMESPAN.match(text)
    if m:
        d, h, mi, s = m.groups()
        return int(d or 0) * 86400 + int(h) * 3600 + int(mi) * 60 + float(s)
    return None


def format_duration(seconds: float) -> str:
    """ISO 8601 as the service answered it: ``P7D``, ``PT1H30M``, ``P1DT2H``."""
    whole = int(seconds)
    days, rest = divmod(whole, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    frac = seconds - whole
    out = "P" + (f"{days}D" if days else "")
    time = (f"{hours}H" if hours else "") + (f"{minutes}M" if minutes else "")
    if secs or frac:
        # Fixed-point: "%g" would write 5e-05 or round 1.0000001 to 1, which no duration parser reads back.
        time += f"{secs + frac:.7f}".rstrip("0").rstrip(".") + "S"
    if time:
        out += "T" + time
    return out if out != "P" else "PT0S"

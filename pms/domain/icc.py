"""An sRGB ICC profile (version 2.1, display class, matrix/TRC), built from the published
numbers: the sRGB primaries adapted to D50 (IEC 61966-2-1 with the Bradford transform, as the
ICC's own sRGB profiles carry them) and the sRGB tone curve sampled at 1024 points. Pure and
deterministic (a fixed creation date), so a PDF that carries it as its output intent
(pms.services.cashiering.facturx, PDF/A-3) answers the same bytes on every run; no profile
file ships with this machine's packages, and this one needs no license of its own.
"""

from __future__ import annotations

import struct
from functools import cache

DESCRIPTION = "sRGB IEC61966-2.1"
COPYRIGHT = "No copyright, use freely"
D50 = (0.9642, 1.0, 0.8249)
PRIMARIES = {b"rXYZ": (0.4360, 0.2225, 0.0139), b"gXYZ": (0.3851, 0.7169, 0.0971),
             b"bXYZ": (0.1431, 0.0606, 0.7141)}
CURVE_POINTS = 1024


def _s15f16(value: float) -> bytes:
    return struct.pack(">i", round(value * 65536))


def _xyz(xyz: tuple[float, float, float]) -> bytes:
    return b"XYZ \0\0\0\0" + b"".join(_s15f16(v) for v in xyz)


def _srgb_to_linear(v: float) -> float:
    return v / 12.92 if v <= 0.04045 else ((v + 0.055) / 1.055) ** 2.4


def _curve() -> bytes:
    points = [round(_srgb_to_linear(i / (CURVE_POINTS - 1)) * 65535) for i in range(CURVE_POINTS)]
    return b"curv\0\0\0\0" + struct.pack(f">I{CURVE_POINTS}H", CURVE_POINTS, *points)


def _desc(text: str) -> bytes:
    ascii_ = text.encode("ascii") + b"\0"
    # textDescriptionType: ASCII, an empty Unicode part and an empty ScriptCode part (67 bytes)
    return (b"desc\0\0\0\0" + struct.pack(">I", len(ascii_)) + ascii_
            + struct.pack(">II", 0, 0) + struct.pack(">HB", 0, 0) + b"\0" * 67)


def _text(text: str) -> bytes:
    return b"text\0\0\0\0" + text.encode("ascii") + b"\0"


@cache
def srgb_profile() -> bytes:
    """The profile's bytes (a few kilobytes)."""
    curve = _curve()
    tags: list[tuple[bytes, bytes]] = [
        (b"desc", _desc(DESCRIPTION)), (b"cprt", _text(COPYRIGHT)), (b"wtpt", _xyz(D50)),
        *((sig, _xyz(xyz)) for sig, xyz in PRIMARIES.items()),
        (b"rTRC", curve), (b"gTRC", curve), (b"bTRC", curve)]
    table_size = 4 + 12 * len(tags)
    offset = 128 + table_size
    entries, data, placed = [], b"", {}
    for sig, body in tags:
        if body not in placed:  # the three tone curves share one copy of the data
            placed[body] = offset + len(data)
            data += body + b"\0" * (-len(body) % 4)
        entries.append(struct.pack(">4sII", sig, placed[body], len(body)))
    size = 128 + table_size + len(data)
    header = (struct.pack(">I4sI4s4s4s", size, b"\0\0\0\0", 0x02100000, b"mntr", b"RGB ",
                          b"XYZ ")
              + struct.pack(">6H", 2026, 1, 1, 0, 0, 0)  # a fixed creation date
              + b"acsp" + b"\0" * 4 + struct.pack(">I", 0) + b"\0" * 8 + b"\0" * 8
              + struct.pack(">I", 0) + b"".join(_s15f16(v) for v in D50) + b"\0" * 4
              + b"\0" * 16 + b"\0" * 28)
    assert len(header) == 128
    return header + struct.pack(">I", len(tags)) + b"".join(entries) + data

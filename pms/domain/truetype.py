"""What a PDF needs to embed a TrueType font as a simple font in WinAnsiEncoding: the advance
widths of the 224 codes 32-255 (in thousandths of an em, as `/Widths` takes them), read from the
font's own `cmap` (platform 3, encoding 1, format 4) and `hmtx` tables, and the descriptor's
metrics (`head`, `hhea`, `OS/2`, `post`). Pure; reads the bytes it is given.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

FIRST_CHAR, LAST_CHAR = 32, 255


@dataclass(frozen=True)
class FontMetrics:
    name: str
    widths: tuple[int, ...]  # FIRST_CHAR..LAST_CHAR
    bbox: tuple[int, int, int, int]
    ascent: int
    descent: int
    cap_height: int
    italic_angle: float


def _tables(data: bytes) -> dict[bytes, bytes]:
    count, = struct.unpack(">H", data[4:6])
    out = {}
    for i in range(count):
        tag, _, offset, length = struct.unpack(">4sIII", data[12 + 16 * i:28 + 16 * i])
        out[tag] = data[offset:offset + length]
    return out


def _cmap_format4(cmap: bytes) -> dict[int, int]:
    count, = struct.unpack(">H", cmap[2:4])
    for i in range(count):
        platform, encoding, offset = struct.unpack(">HHI", cmap[4 + 8 * i:12 + 8 * i])
        if (platform, encoding) == (3, 1) and struct.unpack(">H", cmap[offset:offset + 2])[0] == 4:
            break
    else:
        raise ValueError("the font has no Unicode BMP cmap (3, 1, format 4)")
    sub = cmap[offset:]
    segments = struct.unpack(">H", sub[6:8])[0] // 2
    ends = struct.unpack(f">{segments}H", sub[14:14 + 2 * segments])
    base = 16 + 2 * segments
    starts = struct.unpack(f">{segments}H", sub[base:base + 2 * segments])
    deltas = struct.unpack(f">{segments}h", sub[base + 2 * segments:base + 4 * segments])
    range_at = base + 4 * segments
    offsets = struct.unpack(f">{segments}H", sub[range_at:range_at + 2 * segments])
    glyphs: dict[int, int] = {}
    for seg in range(segments):
        for code in range(starts[seg], min(ends[seg], 0xFFFE) + 1):
            if offsets[seg] == 0:
                glyph = (code + deltas[seg]) & 0xFFFF
            else:
                at = range_at + 2 * seg + offsets[seg] + 2 * (code - starts[seg])
                glyph = struct.unpack(">H", sub[at:at + 2])[0]
                if glyph:
                    glyph = (glyph + deltas[seg]) & 0xFFFF
            if glyph:
                glyphs[code] = glyph
    return glyphs


def _name(table: bytes, fallback: str) -> str:
    count, strings = struct.unpack(">HH", table[2:6])
    for i in range(count):
        platform, encoding, _, name_id, length, offset = struct.unpack(
            ">6H", table[6 + 12 * i:18 + 12 * i])
        if name_id == 6 and platform == 3 and encoding == 1:
            raw = table[strings + offset:strings + offset + length]
            return raw.decode("utf-16-be")
    return fallback


def metrics(data: bytes, *, fallback_name: str = "Font") -> FontMetrics:
    """The font's widths and descriptor metrics, scaled to 1000 units per em."""
    tables = _tables(data)
    head, hhea = tables[b"head"], tables[b"hhea"]
    units, = struct.unpack(">H", head[18:20])
    x_min, y_min, x_max, y_max = struct.unpack(">4h", head[36:44])
    ascent, descent = struct.unpack(">hh", hhea[4:8])
    long_metrics, = struct.unpack(">H", hhea[34:36])
    hmtx = tables[b"hmtx"]
    advances = struct.unpack(f">{long_metrics * 2}H", hmtx[:4 * long_metrics])[::2]
    glyphs = _cmap_format4(tables[b"cmap"])

    def scaled(value: float) -> int:
        return round(value * 1000 / units)

    widths = []
    for code in range(FIRST_CHAR, LAST_CHAR + 1):
        char = bytes([code]).decode("cp1252", errors="ignore")
        glyph = glyphs.get(ord(char), 0) if char else 0
        widths.append(scaled(advances[min(glyph, long_metrics - 1)]))
    os2 = tables.get(b"OS/2", b"")
    cap = (struct.unpack(">h", os2[88:90])[0] if len(os2) >= 90
           and struct.unpack(">H", os2[:2])[0] >= 2 else ascent)  # older OS/2: the ascent
    post = tables[b"post"]
    angle = struct.unpack(">i", post[4:8])[0] / 65536
    return FontMetrics(name=_name(tables[b"name"], fallback_name).replace(" ", ""),
                       widths=tuple(widths),
                       bbox=(scaled(x_min), scaled(y_min), scaled(x_max), scaled(y_max)),
                       ascent=scaled(ascent), descent=scaled(descent),
                       cap_height=scaled(cap), italic_angle=angle)

"""A minimal PDF writer for printable documents (invoices): pages of left-aligned Helvetica text
lines, A4, no dependencies. Pure; returns bytes. Non-Latin-1 characters are replaced."""

from __future__ import annotations

LINES_PER_PAGE = 60
PAGE_W, PAGE_H = 595, 842  # A4 in points


def _escape(text: str) -> str:
    text = text.encode("latin-1", errors="replace").decode("latin-1")
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def _page_stream(lines: list[str], title_size: int = 10) -> bytes:
    parts = ["BT", f"/F1 {title_size} Tf", "12 TL", f"40 {PAGE_H - 50} Td"]
    for line in lines:
        parts.append(f"({_escape(line)}) Tj T*")
    parts.append("ET")
    return "\n".join(parts).encode("latin-1")


def render_pdf(lines: list[str], *, title: str = "Document") -> bytes:
    """A PDF of `lines`, 60 per page."""
    pages = [lines[i:i + LINES_PER_PAGE] for i in range(0, max(len(lines), 1), LINES_PER_PAGE)]
    objects: list[bytes] = []
    font_id = 3
    page_ids = [4 + 2 * i for i in range(len(pages))]  # each page object, then its content
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    kids = " ".join(f"{p} 0 R" for p in page_ids)
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {len(page_ids)} >>".encode())
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica "
                   b"/Encoding /WinAnsiEncoding >>")
    for i, page in enumerate(pages):
        stream = _page_stream(page)
        content_id = page_ids[i] + 1
        objects.append(f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {PAGE_W} {PAGE_H}] "
                       f"/Resources << /Font << /F1 {font_id} 0 R >> >> "
                       f"/Contents {content_id} 0 R >>".encode())
        objects.append(b"<< /Length " + str(len(stream)).encode() + b" >>\nstream\n" + stream
                       + b"\nendstream")
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    for offset in offsets:
        out += f"{offset:010d} 00000 n \n".encode()
    info = _escape(title)
    out += (f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R /Info << /Title ({info}) >> >>\n"
            f"startxref\n{xref}\n%%EOF\n").encode("latin-1")
    return bytes(out)

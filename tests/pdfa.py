"""The PDF/A-3 checks the suite can run without veraPDF (not installable here: no registry
this machine reaches ships it), on a PDF's objects as pypdf reads them:

- the header is PDF 1.4 or later and the trailer has an `/ID`, no `/Encrypt`;
- the catalog has an `/OutputIntents` entry of subtype `/GTS_PDFA1` whose `/DestOutputProfile`
  is a well-formed ICC profile (the header's size is the stream's, signature `acsp`, an RGB
  display or output profile of version 2 or 4 when `/N` is 3, every tag inside the data, and
  the tags a matrix/TRC RGB profile needs: desc, cprt, wtpt, r/g/bXYZ, r/g/bTRC);
- the XMP metadata declares `pdfaid:part` 3 and `pdfaid:conformance` B;
- every font of every page (and of its form XObjects) is embedded: its descriptor has a
  `/FontFile`, `/FontFile2` or `/FontFile3` (`fonts=False` skips this one).

`pdfa_problems` answers what fails, in words; an empty list passes.
"""

from __future__ import annotations

import struct
from io import BytesIO
from typing import Any

from lxml import etree
from pypdf import PdfReader

PDFAID = "http://www.aiim.org/pdfa/ns/id/"
MATRIX_TRC_TAGS = {b"desc", b"cprt", b"wtpt", b"rXYZ", b"gXYZ", b"bXYZ", b"rTRC", b"gTRC",
                   b"bTRC"}


def icc_problems(data: bytes, components: int) -> list[str]:
    if len(data) < 132:
        return ["the ICC profile is shorter than its header"]
    problems = []
    size, = struct.unpack(">I", data[:4])
    if size != len(data):
        problems.append(f"the ICC header's size {size} is not the stream's {len(data)}")
    if data[36:40] != b"acsp":
        problems.append("the ICC profile has no acsp signature")
    if data[8] not in (2, 4):
        problems.append(f"ICC version {data[8]} (PDF/A takes 2 or 4)")
    if data[12:16] not in (b"mntr", b"prtr", b"scnr"):
        problems.append(f"ICC device class {data[12:16]!r} is not an output intent's")
    if components == 3 and data[16:20] != b"RGB ":
        problems.append(f"ICC colour space {data[16:20]!r} for /N 3")
    count, = struct.unpack(">I", data[128:132])
    tags = set()
    for i in range(count):
        sig, offset, length = struct.unpack(">4sII", data[132 + 12 * i:144 + 12 * i])
        tags.add(sig)
        if offset + length > len(data):
            problems.append(f"ICC tag {sig!r} lies outside the profile")
    missing = MATRIX_TRC_TAGS - tags
    if missing and b"A2B0" not in tags:
        problems.append(f"ICC tags missing: {sorted(t.decode() for t in missing)}")
    return problems


def _fonts(resources: Any, seen: set[int]) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    if resources is None:
        return out
    resources = resources.get_object()
    for name, ref in (resources.get("/Font") or {}).items():
        out.append((name, ref.get_object()))
    for ref in (resources.get("/XObject") or {}).values():
        xobject = ref.get_object()
        if id(xobject) in seen or xobject.get("/Subtype") != "/Form":
            continue
        seen.add(id(xobject))
        out.extend(_fonts(xobject.get("/Resources"), seen))
    return out


def _embedded(font: Any) -> bool:
    if font.get("/Subtype") == "/Type0":
        return all(_embedded(d.get_object()) for d in font["/DescendantFonts"])
    if font.get("/Subtype") == "/Type3":
        return True  # its glyphs are content streams of the file itself
    descriptor = font.get("/FontDescriptor")
    if descriptor is None:
        return False
    descriptor = descriptor.get_object()
    return any(key in descriptor for key in ("/FontFile", "/FontFile2", "/FontFile3"))


def _intent_problems(root: Any) -> list[str]:
    problems: list[str] = []
    intents = [i.get_object() for i in (root.get("/OutputIntents") or ())]
    pdfa = [i for i in intents if i.get("/S") == "/GTS_PDFA1"]
    if not pdfa:
        problems.append("no /GTS_PDFA1 output intent")
    for intent in pdfa:
        profile = intent.get("/DestOutputProfile")
        if profile is None:
            problems.append("the output intent has no /DestOutputProfile")
            continue
        profile = profile.get_object()
        problems += icc_problems(profile.get_data(), int(profile.get("/N", 0)))
        if "/OutputConditionIdentifier" not in intent:
            problems.append("the output intent has no /OutputConditionIdentifier")
    return problems


def _xmp_problems(root: Any) -> list[str]:
    metadata = root.get("/Metadata")
    if metadata is None:
        return ["no XMP metadata"]
    xmp = etree.fromstring(metadata.get_object().get_data())
    part = xmp.findtext(f".//{{{PDFAID}}}part")
    conformance = xmp.findtext(f".//{{{PDFAID}}}conformance")
    if part is None:  # the attribute form of the same properties
        for node in xmp.iter():
            part = part or node.get(f"{{{PDFAID}}}part")
            conformance = conformance or node.get(f"{{{PDFAID}}}conformance")
    if part != "3" or conformance != "B":
        return [f"the XMP declares part {part} conformance {conformance}"]
    return []


def pdfa_problems(pdf: bytes, *, fonts: bool = True) -> list[str]:
    problems: list[str] = []
    if not pdf.startswith(b"%PDF-1.") or int(pdf[7:8]) < 4:
        problems.append(f"header {pdf[:8]!r}")
    reader = PdfReader(BytesIO(pdf))
    trailer = reader.trailer
    if "/ID" not in trailer:
        problems.append("the trailer has no /ID")
    if "/Encrypt" in trailer:
        problems.append("the file is encrypted")
    root = trailer["/Root"]
    problems += _intent_problems(root) + _xmp_problems(root)
    if fonts:
        for number, page in enumerate(reader.pages, start=1):
            for name, font in _fonts(page.get("/Resources"), set()):
                if not _embedded(font):
                    problems.append(f"page {number}: font {name} "
                                    f"({font.get('/BaseFont')}) is not embedded")
    return problems

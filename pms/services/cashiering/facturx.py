"""Factur-X / ZUGFeRD hybrid e-invoices: the document's printable PDF with its EN 16931 CII XML
embedded, declared PDF/A-3 (conformance B) in its XMP metadata with the Factur-X extension
schema, the XML attached as `factur-x.xml` (an associated file, `/AFRelationship /Alternative`,
as Factur-X asks of the EN 16931 profile), with an sRGB output intent (`/OutputIntents`, the
ICC profile of pms.domain.icc as its `/DestOutputProfile`) as PDF/A asks of a file that shows
colour, and its text font embedded (PDF/A embeds every font): the printable rendition's
standard Helvetica becomes DejaVu Sans, a TrueType program (`/FontFile2`, whole, Flate-compressed)
with its own widths in the same WinAnsi encoding, read from the machine's fonts-dejavu-core
(`FONT_PATH`, the Bitstream Vera licence lets it be embedded). The printable PDF itself is not
changed. A machine without the font answers the PDF with Helvetica not embedded, and logs it.

Built from the frozen document only and stamped with its issue time (never the clock), so the
same document answers the same bytes on every reprint: the file identifier is the SHA-256 of the
embedded XML.
"""

from __future__ import annotations

import hashlib
import logging
import os
import zlib
from datetime import UTC, datetime
from io import BytesIO
from typing import Any
from xml.sax.saxutils import escape

from pms.domain.icc import srgb_profile
from pms.domain.truetype import FIRST_CHAR, LAST_CHAR, FontMetrics, metrics

log = logging.getLogger(__name__)

XML_NAME = "factur-x.xml"
CONFORMANCE_LEVEL = "EN 16931"
URN = "urn:factur-x:pdfa:CrossIndustryDocument:invoice:1p0#"
PRODUCER = "pms"
OUTPUT_CONDITION = "sRGB IEC61966-2.1"
FONT_PATH = os.environ.get("PMS_PDF_FONT", "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
_FONT_CACHE: dict[str, tuple[FontMetrics, bytes, int] | None] = {}


def _font(path: str) -> tuple[FontMetrics, bytes, int] | None:
    """The font's metrics, its program Flate-compressed and its length (read once)."""
    if path not in _FONT_CACHE:
        try:
            with open(path, "rb") as handle:
                data = handle.read()
            _FONT_CACHE[path] = (metrics(data, fallback_name="DejaVuSans"),
                                 zlib.compress(data, 9), len(data))
        except (OSError, ValueError, KeyError) as exc:
            log.warning("factur-x: no embeddable font at %s (%s): Helvetica stays unembedded",
                        path, exc)
            _FONT_CACHE[path] = None
    return _FONT_CACHE[path]


def _embed_fonts(writer: Any) -> None:
    """Turn each page's standard Helvetica into the embedded TrueType font, in place (the
    font objects keep their numbers; no unembedded font object is left in the file)."""
    from pypdf.generic import (
        ArrayObject,
        DictionaryObject,
        FloatObject,
        NameObject,
        NumberObject,
        StreamObject,
    )

    font = _font(FONT_PATH)
    if font is None:
        return
    info, program, length = font
    done: set[int] = set()
    for page in writer.pages:
        for ref in (page["/Resources"].get_object().get("/Font") or {}).values():
            obj = ref.get_object()
            if id(obj) in done or obj.get("/BaseFont") != "/Helvetica":
                continue
            done.add(id(obj))
            stream = StreamObject()
            stream.set_data(program)
            stream.update({NameObject("/Filter"): NameObject("/FlateDecode"),
                           NameObject("/Length1"): NumberObject(length)})
            stream._data = program  # already compressed: written as it is
            name = NameObject(f"/{info.name}")
            descriptor = DictionaryObject({
                NameObject("/Type"): NameObject("/FontDescriptor"),
                NameObject("/FontName"): name, NameObject("/Flags"): NumberObject(32),
                NameObject("/FontBBox"): ArrayObject([NumberObject(v) for v in info.bbox]),
                NameObject("/ItalicAngle"): FloatObject(info.italic_angle),
                NameObject("/Ascent"): NumberObject(info.ascent),
                NameObject("/Descent"): NumberObject(info.descent),
                NameObject("/CapHeight"): NumberObject(info.cap_height),
                NameObject("/StemV"): NumberObject(80),
                NameObject("/FontFile2"): writer._add_object(stream)})
            obj.clear()
            obj.update({
                NameObject("/Type"): NameObject("/Font"),
                NameObject("/Subtype"): NameObject("/TrueType"),
                NameObject("/BaseFont"): name,
                NameObject("/FirstChar"): NumberObject(FIRST_CHAR),
                NameObject("/LastChar"): NumberObject(LAST_CHAR),
                NameObject("/Widths"): ArrayObject([NumberObject(w) for w in info.widths]),
                NameObject("/Encoding"): NameObject("/WinAnsiEncoding"),
                NameObject("/FontDescriptor"): writer._add_object(descriptor)})


def _utc(moment: datetime) -> datetime:
    return moment if moment.tzinfo is None else moment.astimezone(UTC)


def _pdf_date(moment: datetime) -> str:
    return _utc(moment).strftime("D:%Y%m%d%H%M%S+00'00'")


def _xmp(title: str, seller: str, moment: datetime) -> bytes:
    from drafthorse.xmp_schema import XMP_SCHEMA  # the Factur-X extension schema's template

    return XMP_SCHEMA.format(
        title=escape(title), author=escape(seller), subject=escape(f"Factur-X {title}"),
        producer=PRODUCER, creator_tool=PRODUCER,
        timestamp=_utc(moment).strftime("%Y-%m-%dT%H:%M:%S+00:00"), urn=URN,
        documenttype="INVOICE", xml_filename=XML_NAME, version="1.0",
        xmp_level=CONFORMANCE_LEVEL).encode("utf-8")


def embed(visual_pdf: bytes, xml: bytes, *, title: str, seller: str,
          issued_at: datetime) -> bytes:
    """`visual_pdf` with `xml` attached as the Factur-X associated file and the PDF/A-3 XMP
    metadata; deterministic for the same input."""
    from pypdf import PdfReader, PdfWriter
    from pypdf.generic import (
        ArrayObject,
        ByteStringObject,
        DecodedStreamObject,
        DictionaryObject,
        NameObject,
        NumberObject,
        create_string_object,
    )

    writer = PdfWriter(clone_from=PdfReader(BytesIO(visual_pdf)))
    writer.pdf_header = b"%PDF-1.7"
    _embed_fonts(writer)
    stamp = create_string_object(_pdf_date(issued_at))
    embedded = DecodedStreamObject()
    embedded.set_data(xml)
    embedded.update({
        NameObject("/Type"): NameObject("/EmbeddedFile"),
        NameObject("/Subtype"): NameObject("/text/xml"),
        NameObject("/Params"): DictionaryObject({
            NameObject("/ModDate"): stamp, NameObject("/CreationDate"): stamp,
            NameObject("/Size"): NumberObject(len(xml))}),
    })
    name = create_string_object(XML_NAME)
    spec = writer._add_object(DictionaryObject({
        NameObject("/Type"): NameObject("/Filespec"),
        NameObject("/F"): name, NameObject("/UF"): name,
        NameObject("/AFRelationship"): NameObject("/Alternative"),
        NameObject("/Desc"): create_string_object("Factur-X invoice (EN 16931 CII)"),
        NameObject("/EF"): DictionaryObject({NameObject("/F"): writer._add_object(embedded),
                                             NameObject("/UF"): writer._add_object(embedded)}),
    }))
    metadata = DecodedStreamObject()
    metadata.set_data(_xmp(title, seller, issued_at))
    metadata.update({NameObject("/Type"): NameObject("/Metadata"),
                     NameObject("/Subtype"): NameObject("/XML")})
    profile = DecodedStreamObject()
    profile.set_data(srgb_profile())
    profile.update({NameObject("/N"): NumberObject(3)})
    intent = DictionaryObject({
        NameObject("/Type"): NameObject("/OutputIntent"),
        NameObject("/S"): NameObject("/GTS_PDFA1"),
        NameObject("/OutputConditionIdentifier"): create_string_object(OUTPUT_CONDITION),
        NameObject("/Info"): create_string_object(OUTPUT_CONDITION),
        NameObject("/RegistryName"): create_string_object("http://www.color.org"),
        NameObject("/DestOutputProfile"): writer._add_object(profile),
    })
    writer._root_object.update({
        NameObject("/OutputIntents"): ArrayObject([writer._add_object(intent)]),
        NameObject("/Metadata"): writer._add_object(metadata),
        NameObject("/AF"): writer._add_object(ArrayObject([spec])),
        NameObject("/Names"): DictionaryObject({NameObject("/EmbeddedFiles"): DictionaryObject(
            {NameObject("/Names"): ArrayObject([name, spec])})}),
        NameObject("/PageMode"): NameObject("/UseAttachments"),
    })
    writer.add_metadata({"/Title": title, "/Author": seller, "/Producer": PRODUCER,
                         "/Creator": PRODUCER, "/CreationDate": _pdf_date(issued_at),
                         "/ModDate": _pdf_date(issued_at)})
    digest = ByteStringObject(hashlib.sha256(xml).digest()[:16])
    writer._ID = ArrayObject([digest, digest])
    out = BytesIO()
    writer.write(out)
    return out.getvalue()


def facturx_pdf(document: dict[str, Any]) -> bytes:
    """The document's Factur-X PDF: its printable rendition with its CII XML embedded.

    Raises:
        EInvoiceNeedsCompany, EInvoiceIdentityIncomplete (409), as the XML does.
    """
    from pms.services.cashiering import einvoice, invoices

    xml = einvoice.cii_xml(document)
    title = f"{invoices.TITLES.get(document['kind'], 'INVOICE').title()} {document['number']}"
    return embed(invoices.invoice_pdf(document), xml, title=title,
                 seller=document["seller"]["name"],
                 issued_at=datetime.fromisoformat(document["issued_at"]))

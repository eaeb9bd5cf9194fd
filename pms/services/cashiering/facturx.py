"""Factur-X / ZUGFeRD hybrid e-invoices: the document's printable PDF with its EN 16931 CII XML
embedded, declared PDF/A-3 (conformance B) in its XMP metadata with the Factur-X extension
schema, the XML attached as `factur-x.xml` (an associated file, `/AFRelationship /Alternative`,
as Factur-X asks of the EN 16931 profile).

Built from the frozen document only and stamped with its issue time (never the clock), so the
same document answers the same bytes on every reprint: the file identifier is the SHA-256 of the
embedded XML.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from io import BytesIO
from typing import Any
from xml.sax.saxutils import escape

XML_NAME = "factur-x.xml"
CONFORMANCE_LEVEL = "EN 16931"
URN = "urn:factur-x:pdfa:CrossIndustryDocument:invoice:1p0#"
PRODUCER = "pms"


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
    writer._root_object.update({
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

"""The Factur-X PDF's PDF/A-3 parts that the suite checks (tests/pdfa.py: veraPDF is not
installable here): an sRGB output intent whose ICC profile is well formed, every font embedded,
the XMP's part 3 conformance B, a file identifier; deterministic bytes. Controls: the printable
PDF alone fails them, a broken ICC profile fails, and without its font the Factur-X PDF names the
unembedded Helvetica."""

from __future__ import annotations

import struct
from datetime import UTC, datetime
from io import BytesIO

from pypdf import PdfReader

from pms.domain import icc
from pms.services.cashiering import facturx, invoices
from tests.pdfa import icc_problems, pdfa_problems

DOC = {"kind": "INVOICE", "number": "P-000001", "issued_at": "2026-01-01T00:00:00+00:00",
       "property": {"name": "Hotel", "code": "P"}, "guest": {"last_name": "Müller"},
       "arrival_date": "2026-01-01", "departure_date": "2026-01-02",
       "confirmation_number": "C1", "currency": "EUR",
       "lines": [{"business_date": "2026-01-01", "description": "Zimmer", "amount": "100.00"}],
       "tax_summary": {"VAT7": "6.54"}, "charges_total": "100.00", "language": "de"}
AT = datetime(2026, 1, 1, tzinfo=UTC)


def _facturx() -> bytes:
    return facturx.embed(invoices.invoice_pdf(DOC), b"<rsm:CrossIndustryInvoice/>",
                         title="Rechnung P-000001", seller="Hotel", issued_at=AT)


def test_the_facturx_pdf_passes_the_pdfa_checks_and_is_deterministic():
    pdf = _facturx()
    assert pdfa_problems(pdf) == []
    assert _facturx() == pdf
    reader = PdfReader(BytesIO(pdf))
    font = reader.pages[0]["/Resources"]["/Font"]["/F1"].get_object()
    assert font["/Subtype"] == "/TrueType" and font["/BaseFont"] == "/DejaVuSans"
    program = font["/FontDescriptor"]["/FontFile2"].get_object()
    assert len(program.get_data()) == program["/Length1"]
    assert len(font["/Widths"]) == 224 and font["/Widths"][ord("A") - 32] == 684
    [intent] = [i.get_object() for i in reader.trailer["/Root"]["/OutputIntents"]]
    assert intent["/OutputConditionIdentifier"] == "sRGB IEC61966-2.1"
    assert intent["/DestOutputProfile"].get_object().get_data() == icc.srgb_profile()
    assert "RECHNUNG P-000001" in reader.pages[0].extract_text()


def test_the_printable_pdf_alone_fails_them():  # the control: the checks do check
    problems = pdfa_problems(invoices.invoice_pdf(DOC))
    assert "no /GTS_PDFA1 output intent" in problems
    assert any("(/Helvetica) is not embedded" in p for p in problems)


def test_the_icc_profile_is_well_formed_and_a_broken_one_fails():
    profile = icc.srgb_profile()
    assert icc_problems(profile, 3) == [] and profile[36:40] == b"acsp"
    assert icc_problems(profile[:-4], 3)  # its header's size no longer matches
    assert icc_problems(profile[:16] + b"CMYK" + profile[20:], 3)
    count, = struct.unpack(">I", profile[128:132])
    assert count == 9


def test_without_its_font_the_pdf_names_the_unembedded_helvetica(monkeypatch, tmp_path):
    monkeypatch.setattr(facturx, "FONT_PATH", str(tmp_path / "missing.ttf"))
    problems = pdfa_problems(_facturx())
    assert problems == ["page 1: font /F1 (/Helvetica) is not embedded"]

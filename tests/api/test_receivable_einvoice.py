"""The e-invoice of a company's receivable invoice, through the HTTP API on SQLite and
PostgreSQL: the collective invoice of its direct bills (`GET .../receivable-account/invoices/
{id}?format=xml|facturx`) takes each stay's folio lines as the stay's invoice froze them; it
validates against the Factur-X EN 16931 XSD and the EN 16931 business rules, is numbered and
dated as the receivable invoice, due on its due date, names the seller and the company, and
its total is the receivable invoice's. A direct bill whose stay has no invoice yet is 409
einvoice_needs_stay_invoices naming the folio (the control)."""

from __future__ import annotations

from decimal import Decimal
from io import BytesIO

from lxml import etree
from pypdf import PdfReader

from tests.api.test_company_direct_bill import corp  # noqa: F401  (fixture)
from tests.api.test_einvoice import BUYER_VAT, NS, SELLER_VAT, _dec, _xsd, company_stay  # noqa: F401
from tests.en16931 import failed_rules
from tests.helpers import assert_problem

SUMMARY = ".//ram:SpecifiedTradeSettlementHeaderMonetarySummation/"


def _ar_invoice(co) -> dict:
    resp = co.api.post(f"{co.base}/receivable-account/invoices", {})
    assert resp.status_code == 201, resp.text
    return resp.json


def test_a_receivable_invoice_is_a_valid_en16931_collective_einvoice(company_stay):  # noqa: F811
    co, stay_invoice = company_stay["corp"], company_stay["invoice"]
    ar = _ar_invoice(co)
    url = f"{co.base}/receivable-account/invoices/{ar['id']}"
    resp = co.api.get(url, params={"format": "xml"})
    assert resp.status_code == 200, resp.text
    assert resp.headers["content-type"].startswith("application/xml")
    root = etree.fromstring(resp.content)
    _xsd().assertValid(root)
    assert failed_rules(resp.content) == []
    assert root.findtext(".//rsm:ExchangedDocument/ram:ID", namespaces=NS) == ar["number"]
    assert root.findtext(".//rsm:ExchangedDocument/ram:TypeCode", namespaces=NS) == "380"
    assert root.findtext(".//rsm:ExchangedDocument/ram:IssueDateTime/udt:DateTimeString",
                         namespaces=NS) == ar["issued_on"].replace("-", "")
    assert root.findtext(".//ram:SpecifiedTradePaymentTerms/ram:DueDateDateTime/"
                         "udt:DateTimeString", namespaces=NS) == ar["due_on"].replace("-", "")
    seller = root.find(".//ram:SellerTradeParty", NS)
    buyer = root.find(".//ram:BuyerTradeParty", NS)
    assert seller.findtext(".//ram:SpecifiedTaxRegistration/ram:ID", namespaces=NS) == SELLER_VAT
    assert buyer.findtext(".//ram:SpecifiedTaxRegistration/ram:ID", namespaces=NS) == BUYER_VAT
    assert stay_invoice["number"] in root.findtext(".//rsm:ExchangedDocument/ram:IncludedNote/"
                                                    "ram:Content", namespaces=NS)
    # the company owes the receivable invoice's total, the stay's lines with their VAT
    assert _dec(root, SUMMARY + "ram:GrandTotalAmount") == Decimal(ar["total"])
    assert _dec(root, SUMMARY + "ram:DuePayableAmount") == Decimal(ar["total"])
    rates = {_dec(t, "ram:RateApplicablePercent") for t in root.findall(
        ".//ram:ApplicableHeaderTradeSettlement/ram:ApplicableTradeTax", NS)}
    assert rates == {Decimal("0"), Decimal("7"), Decimal("19")}
    # the same bytes every time; the Factur-X PDF embeds them
    assert co.api.get(url, params={"format": "xml"}).content == resp.content
    pdf = co.api.get(url, params={"format": "facturx"})
    assert pdf.status_code == 200 and pdf.headers["content-type"].startswith("application/pdf")
    [embedded] = PdfReader(BytesIO(pdf.content)).attachments["factur-x.xml"]
    assert embedded == resp.content
    # the JSON answer is unchanged
    assert co.api.get(url).json["number"] == ar["number"]


def test_a_direct_bill_without_its_stays_invoice_has_no_einvoice(company_stay):  # noqa: F811
    co = company_stay["corp"]
    _ar_invoice(co)  # the first stay's bill, invoiced
    res = co.book(co.method("BILL_TO_COMPANY"))
    co.check_in(res)
    assert co.check_out(res).status_code == 200  # no invoice issued for this stay
    ar = _ar_invoice(co)
    folio = co.api.get(f"{co.res}/{res}/folio").json["id"]
    problem = assert_problem(co.api.get(f"{co.base}/receivable-account/invoices/{ar['id']}",
                                        params={"format": "xml"}), 409,
                             "einvoice_needs_stay_invoices")
    assert problem["missing_folio_ids"] == [folio]

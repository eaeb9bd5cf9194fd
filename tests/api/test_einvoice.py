"""EN 16931 e-invoices of a company's documents, through the HTTP API on SQLite and PostgreSQL:
a stay billed to a company (direct bill) is checked out and invoiced; its document's CII XML
(`?format=xml`) validates against the Factur-X EN 16931 XSD that drafthorse ships, names the
seller and the buyer with their VAT ids, carries each line's tax category and rate and a tax
breakdown whose sums hold; a credit note is type 381 referring to the invoice; the XML is
built from the frozen document only; a private guest's document is 409."""

from __future__ import annotations

import os
from datetime import date, timedelta
from decimal import Decimal

import drafthorse
import pytest
from lxml import etree

from tests.api.test_cashiering import add_code
from tests.api.test_company_direct_bill import corp  # noqa: F401  (fixture)
from tests.api.test_settings import MODULES, _patch
from tests.helpers import assert_problem

NS = {"rsm": "urn:un:unece:uncefact:data:standard:CrossIndustryInvoice:100",
      "ram": "urn:un:unece:uncefact:data:standard:ReusableAggregateBusinessInformationEntity:100",
      "udt": "urn:un:unece:uncefact:data:standard:UnqualifiedDataType:100"}
SELLER_VAT, BUYER_VAT = "DE136695976", "FR40303265045"


def _xsd() -> etree.XMLSchema:
    path = os.path.join(os.path.dirname(drafthorse.__file__), "schema",
                        "Factur-X_1.0.07_EN16931.xsd")
    return etree.XMLSchema(etree.parse(path))


def _dec(root, path: str) -> Decimal:
    return Decimal(root.findtext(path, namespaces=NS))


def _seller_identity(api, hotel_id: str) -> None:
    assert api.put(f"/v1/properties/{hotel_id}", {"displayAddress": {
        "line1": "Unter den Linden 1", "city": "Berlin", "postalCode": "10117",
        "countryCode": "DE"}}).status_code == 200
    params = {"property_id": hotel_id}
    etag = api.get(MODULES, params=params).headers["etag"]
    resp = _patch(api, {"invoicing": {"legal_name": "Hotel Linden GmbH", "vat_id": SELLER_VAT,
                                      "payment_terms_days": 14}}, etag, params=params)
    assert resp.status_code == 200, resp.text


@pytest.fixture
def company_stay(corp):  # noqa: F811
    api, hotel = corp.api, corp.hotel
    _seller_identity(api, str(hotel.id))
    company = api.post(f"/v1/properties/{hotel.id}/profiles", {
        "kind": "COMPANY", "company_name": "Acme SARL", "preferences": {"vat_id": BUYER_VAT},
        "address": {"line1": "1 rue de Rivoli", "city": "Paris", "postalCode": "75001",
                    "countryCode": "FR"}}).json["id"]
    corp.company, corp.base = company, f"/v1/properties/{hotel.id}/companies/{company}"
    corp.limit("5000.00")
    method = corp.method("BILL_TO_COMPANY")
    add_code(corp.ctx, hotel.id, "FB", "F&B")  # 7 % VAT included
    add_code(corp.ctx, hotel.id, "MINI", "mini bar", rate="19", inclusive=False)
    res = corp.book(method, nights=2)
    corp.check_in(res)
    folio = api.get(f"{corp.res}/{res}/folio").json["id"]
    f = f"/v1/properties/{hotel.id}/folios/{folio}"
    for code, amount in (("FB", "42.80"), ("MINI", "10.00")):
        resp = api.post(f"{f}/charges", {"transaction_code": code, "amount": amount,
                                         "description": f"{code} {amount}"})
        assert resp.status_code == 201, resp.text
    resp = api.post(f"{f}/allowances", {"transaction_code": "FB", "amount": "10.70",
                                        "reason": "cold soup"})
    assert resp.status_code == 201, resp.text
    resp = corp.check_out(res)
    assert resp.status_code == 200, resp.text
    invoice = api.post(f"{f}/invoice")
    assert invoice.status_code == 201, invoice.text
    return {"corp": corp, "res": res, "f": f, "invoice": invoice.json,
            "docs": f"/v1/properties/{hotel.id}/fiscal-documents"}


def test_a_direct_bill_invoice_is_a_valid_en16931_einvoice_whose_sums_hold(company_stay):
    api, invoice = company_stay["corp"].api, company_stay["invoice"]
    assert invoice["buyer"]["vat_id"] == BUYER_VAT and invoice["seller"]["vat_id"] == SELLER_VAT
    resp = api.get(f"{company_stay['docs']}/{invoice['id']}", params={"format": "xml"})
    assert resp.status_code == 200, resp.text
    assert resp.headers["content-type"].startswith("application/xml")
    root = etree.fromstring(resp.content)
    _xsd().assertValid(root)

    assert root.findtext(".//rsm:ExchangedDocument/ram:TypeCode", namespaces=NS) == "380"
    assert root.findtext(".//rsm:ExchangedDocument/ram:ID", namespaces=NS) == invoice["number"]
    seller = root.find(".//ram:SellerTradeParty", NS)
    buyer = root.find(".//ram:BuyerTradeParty", NS)
    assert seller.findtext("ram:Name", namespaces=NS) == "Hotel Linden GmbH"
    assert seller.findtext(".//ram:CountryID", namespaces=NS) == "DE"
    assert seller.findtext(".//ram:SpecifiedTaxRegistration/ram:ID", namespaces=NS) == SELLER_VAT
    assert buyer.findtext("ram:Name", namespaces=NS) == "Acme SARL"
    assert buyer.findtext(".//ram:SpecifiedTaxRegistration/ram:ID", namespaces=NS) == BUYER_VAT
    assert root.findtext(".//ram:InvoiceCurrencyCode", namespaces=NS) == invoice["currency"]

    items = root.findall(".//ram:IncludedSupplyChainTradeLineItem", NS)
    line_nets = [_dec(i, ".//ram:LineTotalAmount") for i in items]
    rates = {(i.findtext(".//ram:ApplicableTradeTax/ram:CategoryCode", namespaces=NS),
              _dec(i, ".//ram:ApplicableTradeTax/ram:RateApplicablePercent")) for i in items}
    assert rates == {("S", Decimal("7")), ("S", Decimal("19")), ("E", Decimal("0"))}
    # the night stayed, the dinner, its allowance and the minibar: the VAT lines are taxes
    assert len(items) == 4

    summary = ".//ram:SpecifiedTradeSettlementHeaderMonetarySummation/"
    line_total = _dec(root, summary + "ram:LineTotalAmount")
    basis = _dec(root, summary + "ram:TaxBasisTotalAmount")
    tax = _dec(root, summary + "ram:TaxTotalAmount")
    grand = _dec(root, summary + "ram:GrandTotalAmount")
    assert sum(line_nets) == line_total == basis
    assert basis + tax == grand == Decimal(invoice["charges_total"])
    breakdown = root.findall(".//ram:ApplicableHeaderTradeSettlement/ram:ApplicableTradeTax", NS)
    assert sum(_dec(t, "ram:BasisAmount") for t in breakdown) == basis
    assert sum(_dec(t, "ram:CalculatedAmount") for t in breakdown) == tax
    by_rate = {_dec(t, "ram:RateApplicablePercent"): (_dec(t, "ram:BasisAmount"),
                                                        _dec(t, "ram:CalculatedAmount"))
               for t in breakdown}
    assert by_rate[Decimal("7")] == (Decimal("30.00"), Decimal("2.10"))  # 32.10 gross at 7 %
    assert by_rate[Decimal("19")] == (Decimal("10.00"), Decimal("1.90"))
    # the company owes it all (a direct bill), within the payment terms
    assert _dec(root, summary + "ram:DuePayableAmount") == grand
    # within the company's terms (its receivable account's 30 days, not the property's 14)
    due = date.fromisoformat(invoice["issued_at"][:10]) + timedelta(days=30)
    assert invoice["payment_due_date"] == due.isoformat()
    assert root.findtext(".//ram:SpecifiedTradePaymentTerms/ram:DueDateDateTime/"
                         "udt:DateTimeString", namespaces=NS) == due.strftime("%Y%m%d")

    # the folio's own invoice route answers the same bytes, and they never change
    again = api.get(f"{company_stay['f']}/invoice", params={"format": "xml"})
    assert again.content == resp.content


def test_the_einvoice_reads_the_frozen_document_only(company_stay):
    """A change of the seller's settings after issue changes no e-invoice already issued."""
    co, invoice = company_stay["corp"], company_stay["invoice"]
    url = f"{company_stay['docs']}/{invoice['id']}"
    before = co.api.get(url, params={"format": "xml"}).content
    params = {"property_id": str(co.hotel.id)}
    etag = co.api.get(MODULES, params=params).headers["etag"]
    assert _patch(co.api, {"invoicing": {"legal_name": "Renamed GmbH"}}, etag,
                  params=params).status_code == 200
    assert co.api.get(url, params={"format": "xml"}).content == before


def test_a_credit_note_is_type_381_referring_to_its_invoice(company_stay):
    co, invoice = company_stay["corp"], company_stay["invoice"]
    resp = co.api.post(f"{co.res}/{company_stay['res']}/revert", {"reason": "wrong rate"})
    assert resp.status_code == 200, resp.text
    [_, note] = co.api.get(f"{company_stay['f']}/documents").json["data"]
    xml = co.api.get(f"{company_stay['docs']}/{note['id']}", params={"format": "xml"})
    assert xml.status_code == 200, xml.text
    root = etree.fromstring(xml.content)
    _xsd().assertValid(root)
    assert root.findtext(".//rsm:ExchangedDocument/ram:TypeCode", namespaces=NS) == "381"
    assert root.findtext(".//ram:InvoiceReferencedDocument/ram:IssuerAssignedID",
                         namespaces=NS) == invoice["number"]
    summary = ".//ram:SpecifiedTradeSettlementHeaderMonetarySummation/"
    assert _dec(root, summary + "ram:GrandTotalAmount") == Decimal(invoice["charges_total"])


def test_a_private_guests_document_has_no_einvoice(company_stay):
    co = company_stay["corp"]
    res = co.book()
    co.check_in(res)
    folio = co.api.get(f"{co.res}/{res}/folio").json
    f = f"/v1/properties/{co.hotel.id}/folios/{folio['id']}"
    assert co.api.post(f"{f}/payments", {"amount": folio["balance_due"],
                                           "method": "CASH"}).status_code == 201
    assert co.check_out(res).status_code == 200
    invoice = co.api.post(f"{f}/invoice").json
    assert invoice["buyer"] is None
    problem = assert_problem(co.api.get(f"{company_stay['docs']}/{invoice['id']}",
                                          params={"format": "xml"}), 409,
                             "einvoice_needs_company")
    assert "private guest" in problem["detail"]


def test_a_company_without_a_country_has_no_einvoice_until_its_identity_is_complete(
        company_stay):
    co = company_stay["corp"]
    company = co.api.post(f"/v1/properties/{co.hotel.id}/profiles", {
        "kind": "COMPANY", "company_name": "Nowhere Ltd"}).json["id"]
    co.company, co.base = company, f"/v1/properties/{co.hotel.id}/companies/{company}"
    co.limit("5000.00")
    res = co.book(co.method("BILL_TO_COMPANY"))
    co.check_in(res)
    assert co.check_out(res).status_code == 200
    folio = co.api.get(f"{co.res}/{res}/folio").json["id"]
    invoice = co.api.post(f"/v1/properties/{co.hotel.id}/folios/{folio}/invoice").json
    assert invoice["buyer"]["name"] == "Nowhere Ltd"
    problem = assert_problem(co.api.get(f"{company_stay['docs']}/{invoice['id']}",
                                        params={"format": "xml"}), 409,
                             "einvoice_identity_incomplete")
    assert problem["missing"] == ["buyer.address.country_code (the company profile's address)"]

"""EN 16931 e-invoices of a company's fiscal documents: Factur-X / ZUGFeRD (EN 16931 profile)
Cross Industry Invoice XML, built with drafthorse and checked against the standard's XSD when
serialized.

Everything comes from the document as frozen at issue, so the XML of a document never changes:
`frozen_identity` adds to a document, when it is issued, the seller's identity (the property's
`invoicing` module settings over its name and address), the buyer's (the company the stay is
billed to, with its VAT id; null for a private guest), the VAT rate of every tax line (the
percentage of the rule that posted it, as it was then) and the payment due date (for a company:
the issue date plus its receivable account's `payment_terms_days`, else the property's
`invoicing.payment_terms_days`). A credit note copies these from the invoice
it cancels.

Lines: every folio line except a VAT line is an invoice line at its net amount; its VAT lines
(percentage tax lines whose `parent_id` is the line) give its category S and rate, a line
without VAT is category E (exempt); a tax line that is not a percentage of its parent (a city
tax per night) is a line of its own, category E. The tax breakdown groups the lines' nets by
category and rate with the VAT posted on them, so the line total equals the tax basis and basis
plus VAT equals the grand total (= the document's `charges_total`). A credit note (type 381,
the cancelled invoice referenced) shows the amounts of the invoice it cancels as positive
figures, as the standard reads a credit note.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any

from pms.errors import Conflict
from pms.models import Profile, Property

FROZEN_KEYS = ("seller", "buyer", "line_tax_rates", "payment_due_date")
PROFILE = "FACTUR-X_EN16931"
GUIDELINE = "urn:cen.eu:en16931:2017"
TYPE_CODES = {"INVOICE": "380", "CREDIT_NOTE": "381"}
EXEMPTION = "Not subject to VAT"


class EInvoiceNeedsCompany(Conflict):
    """Raised for the e-invoice of a document whose buyer is a private guest."""

    code = "einvoice_needs_company"


class EInvoiceIdentityIncomplete(Conflict):
    """Raised when the frozen seller or buyer identity lacks what EN 16931 requires."""

    code = "einvoice_identity_incomplete"


# -- frozen at issue ----------------------------------------------------------------------------

def _address(raw: dict[str, Any] | None) -> dict[str, Any]:
    raw = raw or {}
    return {"line1": raw.get("line1"), "line2": raw.get("line2"), "city": raw.get("city"),
            "postal_code": raw.get("postalCode"), "region": raw.get("region"),
            "country_code": raw.get("countryCode")}


def _buyer(folio: Any) -> dict[str, Any] | None:
    if folio.reservation_id is None:
        return None
    from pms.models.companies import CompanyBilling

    link = CompanyBilling.get_or_none(CompanyBilling.reservation_id == folio.reservation_id)
    company = None if link is None else Profile.get_or_none(
        Profile.id == link.company_profile_id)
    if company is None:
        return None
    return {"kind": "COMPANY", "company_id": str(company.id), "name": company.company_name,
            "address": _address(company.address),
            "vat_id": (company.preferences or {}).get("vat_id")}


def _tax_rates(property_id: Any, lines: list[dict[str, Any]]) -> dict[str, str]:
    """The VAT rate (percent) of every percentage tax line, from the rule of its parent's
    transaction code that posted it."""
    from pms.domain.tax import PERCENTAGE
    from pms.models.cashiering import TransactionCode

    by_id = {line["id"]: line for line in lines}
    rates: dict[str, str] = {}
    codes: dict[str, Any] = {}
    for line in lines:
        parent = by_id.get(line.get("parent_id"))
        if line["kind"] != "tax" or parent is None or not parent.get("transaction_code"):
            continue
        code = parent["transaction_code"]
        if code not in codes:
            codes[code] = TransactionCode.get_or_none(TransactionCode.property == property_id,
                                                      TransactionCode.code == code)
        row = codes[code]
        for rule in (row.tax_rules if row is not None else None) or ():
            if rule.get("code") == line["transaction_code"] and rule.get("kind") == PERCENTAGE:
                rates[line["id"]] = str(Decimal(str(rule["rate"])))
    return rates


def frozen_identity(ctx: Any, prop: Property, folio: Any, document: dict[str, Any]
                    ) -> dict[str, Any]:
    """What an e-invoice needs beyond the folio's lines, as it is at issue (inside the issuing
    unit of work)."""
    from pms.services.catalog import settings

    invoicing = settings.effective(ctx, prop.id)["invoicing"]
    buyer = _buyer(folio)
    terms = invoicing.get("payment_terms_days")
    if buyer is not None:
        from pms.models.companies import CompanyReceivableAccount

        account = CompanyReceivableAccount.get_or_none(
            CompanyReceivableAccount.company_profile_id == buyer["company_id"])
        if account is not None and account.payment_terms_days is not None:
            terms = account.payment_terms_days  # the company's terms, as its AR invoices'
    due = None
    if buyer is not None and terms is not None:
        due = (datetime.fromisoformat(document["issued_at"]).date()
               + timedelta(days=terms)).isoformat()
    return {
        "seller": {"name": invoicing.get("legal_name") or prop.name,
                   "address": _address(prop.display_address),
                   "vat_id": invoicing.get("vat_id"), "tax_number": invoicing.get("tax_number")},
        "buyer": buyer,
        "line_tax_rates": _tax_rates(prop.id, document["lines"]),
        "payment_due_date": due,
    }


# -- the CII XML --------------------------------------------------------------------------------

def _missing(document: dict[str, Any]) -> list[str]:
    seller, buyer = document["seller"], document["buyer"]
    missing = []
    if not seller["address"].get("country_code"):
        missing.append("seller.address.country_code (the property's display address)")
    if not (seller.get("vat_id") or seller.get("tax_number")):
        missing.append("seller.vat_id or seller.tax_number (module settings invoicing)")
    if not buyer["address"].get("country_code"):
        missing.append("buyer.address.country_code (the company profile's address)")
    return missing


def check_available(document: dict[str, Any]) -> None:
    """Raises EInvoiceNeedsCompany (409) for a private guest's document or one issued before
    identities were frozen, EInvoiceIdentityIncomplete (409) when an identity lacks a field."""
    if "seller" not in document:
        raise EInvoiceNeedsCompany("this document was issued without the seller's and buyer's "
                                   "identity; it has no e-invoice", document_id=document["id"])
    if document["buyer"] is None:
        raise EInvoiceNeedsCompany("an e-invoice is issued for a company's document (a stay "
                                   "billed to a company); this document's buyer is a private "
                                   "guest: use the PDF", document_id=document["id"])
    missing = _missing(document)
    if missing:
        raise EInvoiceIdentityIncomplete(
            "the document's frozen identities lack what EN 16931 requires: "
            + "; ".join(missing), document_id=document["id"], missing=missing)


def breakdown(document: dict[str, Any]) -> dict[str, Any]:
    """The e-invoice's figures from the frozen document: `items` (name, net, category, rate,
    date), `taxes` by (category, rate) with basis and VAT, and the totals; amounts signed as the
    standard reads them (a credit note's positive)."""
    sign = Decimal(-1) if document["kind"] == "CREDIT_NOTE" else Decimal(1)
    rates = document.get("line_tax_rates") or {}
    lines = document["lines"]
    by_id = {line["id"]: line for line in lines}
    vat_of: dict[str, list[dict[str, Any]]] = {}
    for line in lines:
        if line["kind"] == "tax" and line["id"] in rates and line.get("parent_id") in by_id:
            vat_of.setdefault(line["parent_id"], []).append(line)
    items, taxes = [], {}
    for line in lines:
        if line["kind"] == "tax" and line["id"] in rates and line.get("parent_id") in by_id:
            continue
        net = sign * Decimal(line["amount"])
        vat_lines = vat_of.get(line["id"], [])
        rate = sum((Decimal(rates[v["id"]]) for v in vat_lines), Decimal(0))
        category = "S" if vat_lines and rate > 0 else "E"
        vat = sign * sum((Decimal(v["amount"]) for v in vat_lines), Decimal(0))
        items.append({"id": line["id"], "name": line["description"], "net": net,
                      "category": category, "rate": rate,
                      "date": line.get("night") or line["business_date"]})
        key = (category, rate)
        basis, tax = taxes.get(key, (Decimal(0), Decimal(0)))
        taxes[key] = (basis + net, tax + vat)
    line_total = sum((i["net"] for i in items), Decimal(0))
    tax_total = sum((t for _, t in taxes.values()), Decimal(0))
    prepaid = sum((Decimal(p["amount"]) for p in document.get("payments", ())
                   if p.get("method") != "DIRECT_BILL"), Decimal(0))
    return {"items": items,
            "taxes": [{"category": c, "rate": r, "basis": b, "tax": t}
                      for (c, r), (b, t) in sorted(taxes.items())],
            "line_total": line_total, "tax_basis_total": line_total, "tax_total": tax_total,
            "grand_total": line_total + tax_total, "prepaid": prepaid,
            "due": line_total + tax_total - prepaid}


def _party(party: Any, identity: dict[str, Any]) -> None:
    from drafthorse.models.party import TaxRegistration

    party.name = identity["name"]
    address = identity["address"]
    if address.get("postal_code"):
        party.address.postcode = address["postal_code"]
    if address.get("line1"):
        party.address.line_one = address["line1"]
    if address.get("line2"):
        party.address.line_two = address["line2"]
    if address.get("city"):
        party.address.city_name = address["city"]
    party.address.country_id = address["country_code"]
    if identity.get("vat_id"):
        party.tax_registrations.add(TaxRegistration(id=("VA", identity["vat_id"])))
    if identity.get("tax_number"):
        party.tax_registrations.add(TaxRegistration(id=("FC", identity["tax_number"])))


def _day(text: str) -> date:
    return date.fromisoformat(text[:10])


def cii_xml(document: dict[str, Any]) -> bytes:
    """The document's EN 16931 CII XML (Factur-X EN 16931 profile), validated against the XSD.

    Raises:
        EInvoiceNeedsCompany, EInvoiceIdentityIncomplete (409).
    """
    from drafthorse.models.accounting import ApplicableTradeTax
    from drafthorse.models.document import Document
    from drafthorse.models.note import IncludedNote
    from drafthorse.models.payment import PaymentTerms
    from drafthorse.models.tradelines import LineItem

    check_available(document)
    figures = breakdown(document)
    cur = document["currency"]
    doc = Document()
    doc.context.guideline_parameter.id = GUIDELINE
    doc.header.id = document["number"]
    doc.header.type_code = TYPE_CODES[document["kind"]]
    doc.header.issue_date_time = _day(document["issued_at"])
    note = IncludedNote()
    note.content = document.get("note") or (
        f"Stay {document['arrival_date']} - {document['departure_date']}, "
        f"confirmation {document['confirmation_number']}")
    doc.header.notes.add(note)
    if document["kind"] == "CREDIT_NOTE":
        reason = IncludedNote()
        reason.content = (f"Cancels invoice {document['refers_to']['number']}: "
                           f"{document['reason']}")
        doc.header.notes.add(reason)
        ref = doc.trade.settlement.invoice_referenced_document
        ref.issuer_assigned_id = document["refers_to"]["number"]
        ref.issue_date_time = _day(document["refers_to"]["issued_at"])
    _party(doc.trade.agreement.seller, document["seller"])
    _party(doc.trade.agreement.buyer, document["buyer"])
    doc.trade.agreement.buyer_reference = document["confirmation_number"]
    doc.trade.delivery.event.occurrence = _day(document["departure_date"])
    settlement = doc.trade.settlement
    settlement.currency_code = cur
    settlement.period.start = _day(document["arrival_date"])
    settlement.period.end = _day(document["departure_date"])
    for n, item in enumerate(figures["items"], start=1):
        li = LineItem()
        li.document.line_id = str(n)
        li.product.name = item["name"]
        quantity = Decimal(-1) if item["net"] < 0 else Decimal(1)
        li.agreement.net.amount = abs(item["net"])
        li.delivery.billed_quantity = (quantity, "C62")
        li.settlement.trade_tax.type_code = "VAT"
        li.settlement.trade_tax.category_code = item["category"]
        li.settlement.trade_tax.rate_applicable_percent = item["rate"]
        li.settlement.period.start = _day(item["date"])
        li.settlement.period.end = _day(item["date"])
        li.settlement.monetary_summation.total_amount = item["net"]
        doc.trade.items.add(li)
    for tax in figures["taxes"]:
        trade_tax = ApplicableTradeTax()
        trade_tax.calculated_amount = tax["tax"]
        trade_tax.basis_amount = tax["basis"]
        trade_tax.type_code = "VAT"
        trade_tax.category_code = tax["category"]
        if tax["category"] == "E":
            trade_tax.exemption_reason = EXEMPTION
        trade_tax.rate_applicable_percent = tax["rate"]
        settlement.trade_tax.add(trade_tax)
    if document.get("payment_due_date"):
        terms = PaymentTerms()
        terms.description = f"Payable by {document['payment_due_date']}"
        terms.due = _day(document["payment_due_date"])
        settlement.terms.add(terms)
    total = settlement.monetary_summation
    total.line_total = figures["line_total"]
    total.charge_total = Decimal(0)
    total.allowance_total = Decimal(0)
    total.tax_basis_total = figures["tax_basis_total"]
    total.tax_total = (figures["tax_total"], cur)
    total.grand_total = figures["grand_total"]
    total.prepaid_total = figures["prepaid"]
    total.due_amount = figures["due"]
    return doc.serialize(schema=PROFILE)


# -- a company's collective (receivable) invoice -----------------------------------------------

class EInvoiceNeedsStayInvoices(Conflict):
    """Raised for the e-invoice of a company's receivable invoice whose stays have no invoice
    of their own to take the lines, VAT rates and identities from."""

    code = "einvoice_needs_stay_invoices"


def collective_document(invoice: Any, items: list[Any], stay_invoices: dict[Any, list[Any]]
                        ) -> dict[str, Any]:
    """The e-invoice document of a company's receivable invoice (`CompanyInvoice`): one
    invoice (type 380) numbered as the receivable invoice, dated its issue day, due on its due
    date, whose lines are the folio lines each of its direct bills took over, as the stay's
    first invoice naming them froze them (amounts, VAT rates, the seller's and the company's
    identity). `stay_invoices`: each folio's INVOICE rows, oldest first. Pure; the same rows
    give the same document.

    Raises:
        EInvoiceNeedsStayInvoices (409): a direct bill whose folio has no invoice naming its
            lines, or one issued before identities were frozen.
    """
    lines: list[dict[str, Any]] = []
    rates: dict[str, str] = {}
    sources: list[dict[str, Any]] = []
    missing: list[str] = []
    for item in items:
        wanted = {line["id"] for line in item.lines or ()}
        source = next((row.document for row in stay_invoices.get(item.folio_id, ())
                       if wanted <= {line["id"] for line in row.document["lines"]}), None)
        if source is None or "seller" not in source:
            missing.append(str(item.folio_id))
            continue
        sources.append(source)
        lines += [line for line in source["lines"] if line["id"] in wanted]
        rates.update({k: v for k, v in (source.get("line_tax_rates") or {}).items()
                      if k in wanted})
    if missing or not sources:
        raise EInvoiceNeedsStayInvoices(
            "the e-invoice of a receivable invoice takes each stay's lines from the stay's "
            "own invoice: issue the invoices of these folios first (or turn "
            "invoicing.invoice_at_check_out on)", missing_folio_ids=missing)
    stays = ", ".join(f"{d['confirmation_number']} (invoice {d['number']})" for d in sources)
    taxes: dict[str, Decimal] = {}
    for line in lines:
        if line["kind"] == "tax":
            key = line.get("transaction_code") or line["description"]
            taxes[key] = taxes.get(key, Decimal(0)) + Decimal(line["amount"])
    return {
        "property": sources[0]["property"],
        "guest": {"first_name": None, "last_name": (sources[0]["buyer"] or {}).get("name")},
        "tax_summary": {k: str(v) for k, v in sorted(taxes.items())},
        "charges_total": str(sum((Decimal(line["amount"]) for line in lines), Decimal(0))),
        "id": str(invoice.id), "kind": "INVOICE", "number": invoice.number,
        "issued_at": invoice.issued_on.isoformat(), "currency": invoice.currency,
        "seller": sources[0]["seller"], "buyer": sources[0]["buyer"],
        "line_tax_rates": rates, "lines": lines, "payments": [],
        "payment_due_date": invoice.due_on.isoformat(),
        "arrival_date": min(d["arrival_date"] for d in sources),
        "departure_date": max(d["departure_date"] for d in sources),
        "confirmation_number": invoice.number,
        "note": f"Collective invoice of the stays {stays}",
    }

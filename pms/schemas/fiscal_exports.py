"""The auditor's export of a period (pms.services.cashiering.fiscal_export)."""

from __future__ import annotations

from datetime import date

import msgspec

from pms.schemas.common import Strict


class AuditExportIn(Strict):
    """The period, both dates included (UTC), at most 400 days."""

    date_from: date = msgspec.field(name="from")
    date_to: date = msgspec.field(name="to")

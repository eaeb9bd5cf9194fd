"""VAT identification numbers checked by their check digits (python-stdnum). Pure; no I/O.

A VAT id is written with its country prefix (`DE136695976`, `FR40303265045`, `ATU13585627`;
Greece's is `EL...`); spaces, dots and dashes are allowed and dropped. What the tax authority's
register says (whether the number is assigned today) is not asked: only its format and its
check digits, which catch a mistyped id before it reaches an invoice.
"""

from __future__ import annotations

from stdnum import vatin
from stdnum.exceptions import (
    InvalidChecksum,
    InvalidComponent,
    InvalidFormat,
    InvalidLength,
    ValidationError,
)

from pms.errors import ValidationFailed

_REASONS = {
    InvalidChecksum: "its check digits do not match (a mistyped number)",
    InvalidLength: "it has the wrong length for its country",
    InvalidComponent: "its country prefix is unknown or one of its parts is not valid",
    InvalidFormat: "it is not written as a VAT id of its country (prefix, then digits)",
}


def check_vat_id(value: str, field: str) -> str:
    """The VAT id in its compact form (upper case, no separators).

    Raises:
        ValidationFailed (422 invalid_vat_id) naming `field`.
    """
    try:
        return vatin.validate(value.strip())
    except ValidationError as exc:
        reason = next((text for kind, text in _REASONS.items() if isinstance(exc, kind)),
                      "it is not a VAT id")
        raise ValidationFailed(f"{field} {value!r} is not a valid VAT id: {reason}",
                               code="invalid_vat_id",
                               errors=[{"field": field, "message": reason}]) from None

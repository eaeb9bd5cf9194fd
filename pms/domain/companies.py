"""Company roles and what each may do: pure data, documented in
docs/guides/corporate-accounts.md and tested cell by cell (tests/unit/test_company_roles.py and
tests/api/test_companies.py).

A traveler session (client_kind `user`, holder_id = the traveler's profile) acts on the company
of the path with the role of its binding; a token whose holder_id is the company's own profile
acts as that company's ADMIN. Staff (no holder) are not in this table: their scopes decide.
Approving, rejecting and suspending payment methods and admin provisioning are staff-only
routes (a holder session gets 403 guest_not_allowed there), so no role appears for them.
"""

from __future__ import annotations

from enum import StrEnum


class CompanyRole(StrEnum):
    ADMIN = "ADMIN"
    BOOKER = "BOOKER"
    TRAVELER = "TRAVELER"
    VIEWER = "VIEWER"


class CompanyAction(StrEnum):
    LIST_USERS = "list_users"                  # every binding of the company
    LIST_OWN_USER = "list_own_user"            # only the caller's own binding
    ADD_USER = "add_user"
    REMOVE_USER = "remove_user"
    LIST_PAYMENT_METHODS = "list_payment_methods"  # every method, any status
    LIST_USABLE_PAYMENT_METHODS = "list_usable_payment_methods"  # POSTPAY / BILL_TO_COMPANY only
    SUBMIT_PAYMENT_METHOD = "submit_payment_method"
    RESUBMIT_PAYMENT_METHOD = "resubmit_payment_method"
    REMOVE_PAYMENT_METHOD = "remove_payment_method"
    SEARCH_CORPORATE = "search_corporate"      # the company's negotiated offers
    BOOK_OWN = "book_own"                      # book for itself, on the company's rates/methods
    BOOK_FOR_TRAVELER = "book_for_traveler"    # book for another traveler of the company


_A = CompanyAction
ROLE_ACTIONS: dict[CompanyRole, frozenset[CompanyAction]] = {
    CompanyRole.ADMIN: frozenset(CompanyAction),
    CompanyRole.BOOKER: frozenset({_A.LIST_USERS, _A.LIST_OWN_USER, _A.LIST_PAYMENT_METHODS,
                                   _A.LIST_USABLE_PAYMENT_METHODS, _A.SEARCH_CORPORATE,
                                   _A.BOOK_OWN, _A.BOOK_FOR_TRAVELER}),
    CompanyRole.VIEWER: frozenset({_A.LIST_USERS, _A.LIST_OWN_USER, _A.LIST_PAYMENT_METHODS,
                                   _A.LIST_USABLE_PAYMENT_METHODS, _A.SEARCH_CORPORATE}),
    CompanyRole.TRAVELER: frozenset({_A.LIST_OWN_USER, _A.LIST_USABLE_PAYMENT_METHODS,
                                     _A.SEARCH_CORPORATE, _A.BOOK_OWN}),
}


def may(role: CompanyRole | str, action: CompanyAction) -> bool:
    return action in ROLE_ACTIONS[CompanyRole(role)]

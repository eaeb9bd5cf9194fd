"""Every fast path names the test that proves it answers as its reference.

`pms.db.dialect.fast_path` pairs a rule's portable reference with its PostgreSQL fast path,
"same arguments, same answer". Each decorated function in pms/ is found here (`ast`) and must
be in `PROVEN` (a randomized or case-by-case test that runs both on the same data and compares
them) or in `SAME_ROWS` (write batching: the fast path queues the statements the reference
sends at once, to go with the unit of work's COMMIT; the use case's write-path test runs on
both databases and checks the rows it leaves). A new fast path without its test fails here;
so does a named test that does not exist. A pair that answers differently by design is a
`dialect_variant` and is not listed.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_RULES = "tests/services/test_rule_equivalence.py"
_WRITES = "tests/services/test_frontdesk_write_path.py"

PROVEN = {
    "pms/services/inventory/inventory.py:_take":
        f"{_RULES}::test_the_take_function_sells_what_the_python_take_sells",
    "pms/services/reservations/booking_refs.py:_read_refs":
        f"{_RULES}::test_the_booking_read_filters_restrictions_and_rates_as_the_search_does",
    "pms/services/frontdesk/desk_writes.py:assign_room":
        f"{_RULES}::test_the_room_pick_function_picks_what_the_python_pick_picks",
    "pms/services/cashiering/folio_state.py:read_state":
        f"{_RULES}::test_the_folio_state_function_reads_what_the_python_read_reads",
    "pms/services/cashiering/folio_state.py:read_guest_state":
        f"{_RULES}::test_the_folio_state_function_reads_what_the_python_read_reads",
    # (the same pair as read_state's: the function's read against `_from_models`)
    "pms/services/cashiering/folio_state.py:state_of":
        f"{_RULES}::test_the_folio_state_function_reads_what_the_python_read_reads",
    "pms/services/frontdesk/desk_writes.py:occupy_room":
        "tests/services/test_checkin_write_equivalence.py"
        "::test_the_checkin_writes_write_what_the_models_write",
    "pms/services/reservations/stays.py:lock_stay":
        "tests/services/test_stay_lock_equivalence.py::test_the_stay_lock_reads_what_the_models_read",
    "pms/services/reservations/room_holds.py:lock_room":
        "tests/services/test_stay_lock_equivalence.py::test_the_room_lock_reads_what_the_models_read",
    "pms/services/frontdesk/stay_reads.py:check_out_read":
        "tests/services/test_stay_reads.py"
        "::test_the_check_out_read_locks_the_stay_its_room_and_its_folios_in_one_statement",
}

SAME_ROWS = {
    "pms/services/frontdesk/desk_writes.py:vacate":
        f"{_WRITES}::test_a_check_out_and_what_it_writes_with_the_commit",
    "pms/services/cashiering/folio_state.py:close_folios":
        f"{_WRITES}::test_a_check_out_and_what_it_writes_with_the_commit",
    "pms/services/cashiering/folio_state.py:record_payment_outcome":
        f"{_WRITES}::test_a_card_payment_is_two_transactions_around_the_call",
    "pms/services/cashiering/folio_state.py:outcome_read":
        f"{_WRITES}::test_a_card_payment_is_two_transactions_around_the_call",
    "pms/services/cashiering/fiscal_journal.py:_advance_head":
        "tests/api/test_fiscal_documents.py"
        "::test_a_stay_corrected_after_its_invoice_gets_a_credit_note_and_a_new_invoice",
    "pms/db/statements.py:bulk_insert":
        f"{_WRITES}::test_a_check_out_and_what_it_writes_with_the_commit",
}


def decorated(source: str, dispatcher: str = "fast_path") -> list[str]:
    """The functions of `source` decorated with `dispatcher(...)`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef):
            for deco in node.decorator_list:
                if isinstance(deco, ast.Call) and getattr(deco.func, "id", None) == dispatcher:
                    found.append(node.name)
    return found


def fast_paths() -> set[str]:
    out = set()
    for path in sorted((ROOT / "pms").rglob("*.py")):
        if path.name == "dialect.py":
            continue
        for name in decorated(path.read_text()):
            out.add(f"{path.relative_to(ROOT)}:{name}")
    return out


def _test_exists(ref: str) -> bool:
    file, _, name = ref.partition("::")
    path = ROOT / file
    return path.is_file() and name in {
        node.name for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.FunctionDef)}


def test_every_fast_path_names_the_test_that_proves_it():
    found = fast_paths()
    assert len(found) > 10  # (the walk found the fast paths)
    named = set(PROVEN) | set(SAME_ROWS)
    assert not found - named, f"fast paths without their test: {sorted(found - named)}"
    assert not named - found, f"listed but no fast path: {sorted(named - found)}"
    assert not set(PROVEN) & set(SAME_ROWS)


def test_every_named_test_exists():
    missing = [ref for ref in {**PROVEN, **SAME_ROWS}.values() if not _test_exists(ref)]
    assert not missing, f"no such test: {missing}"


def test_the_walk_tells_a_fast_path_from_a_variant():
    snippet = """
@fast_path(_pg)
def same(x): ...

@dialect_variant(_pg)
def different(x): ...
"""
    assert decorated(snippet) == ["same"]
    assert decorated(snippet, "dialect_variant") == ["different"]
    assert not _test_exists("tests/unit/test_fast_paths.py::test_that_is_not_here")

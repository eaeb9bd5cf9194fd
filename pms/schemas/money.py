"""Money in request bodies: every field declared `Amount` (or `SignedAmount`) is read by the one
parser `pms.domain.money.parse_money`, from the JSON value as the client wrote it.

msgspec turns any JSON number or any string Python's Decimal accepts (" 1.00", "1_000",
"Infinity", "1E+400") into a Decimal before a schema could object, so the form is checked on the
decoded document (`req.context.json_body`, numbers kept as written) against the paths of the
money fields of the body's schema, found once per schema from the `{"money": ...}` marker in
the fields' metadata.
"""

from __future__ import annotations

import functools
from typing import Any

import msgspec.inspect as mi

from pms.domain.money import MoneyFormError, parse_money
from pms.errors import ValidationFailed

MONEY_KEY = "money"
EACH = object()  # a path step into every item of a list or every value of a dict

Step = Any  # a field's JSON name, or EACH
MoneyPath = tuple[tuple[Step, ...], bool]  # (steps, signed)


@functools.cache
def money_paths(body_type: Any) -> tuple[MoneyPath, ...]:
    """Where in a body of `body_type` money fields sit (computed once per schema)."""
    found: list[MoneyPath] = []
    _collect(mi.type_info(body_type), (), found, set())
    return tuple(found)


def _collect(info: Any, steps: tuple[Step, ...], found: list[MoneyPath], seen: set[Any]) -> None:
    if isinstance(info, mi.Metadata):
        kind = (info.extra or {}).get(MONEY_KEY)
        if kind is not None:
            found.append((steps, kind == "signed"))
            return
        _collect(info.type, steps, found, seen)
    elif isinstance(info, (mi.StructType, mi.DataclassType, mi.TypedDictType)):
        if info.cls in seen:  # a recursive schema: its money fields are found once
            return
        seen = seen | {info.cls}
        for field in info.fields:
            _collect(field.type, (*steps, field.encode_name), found, seen)
    elif isinstance(info, mi.UnionType):
        for member in info.types:
            _collect(member, steps, found, seen)
    elif isinstance(info, (mi.ListType, mi.SetType, mi.FrozenSetType, mi.VarTupleType)):
        _collect(info.item_type, (*steps, EACH), found, seen)
    elif isinstance(info, mi.DictType):
        _collect(info.value_type, (*steps, EACH), found, seen)


def money_form_errors(body_type: Any, doc: Any) -> list[dict[str, str]]:
    """`{field, message}` for every money field of `doc` not written as a decimal string."""
    errors: list[dict[str, str]] = []
    for steps, signed in money_paths(body_type):
        for path, value in _values_at(doc, steps):
            if value is None:
                continue  # an optional field sent as null: the schema decided that already
            try:
                parse_money(value, signed=signed)
            except MoneyFormError as exc:
                errors.append({"field": path, "message": str(exc)})
    return errors


def check_money_form(body_type: Any, doc: Any) -> None:
    """Raise ValidationFailed (422) naming every money field of a body not written as money."""
    errors = money_form_errors(body_type, doc)
    if errors:
        raise ValidationFailed(f"the request body is not valid: {errors[0]['field']} "
                               f"{errors[0]['message']}", errors=errors)


def _values_at(doc: Any, steps: tuple[Step, ...]) -> list[tuple[str, Any]]:
    nodes: list[tuple[str, Any]] = [("", doc)]
    for step in steps:
        following: list[tuple[str, Any]] = []
        for path, node in nodes:
            if step is EACH:
                if isinstance(node, list):
                    following.extend((f"{path}[{i}]", item) for i, item in enumerate(node))
                elif isinstance(node, dict):
                    following.extend((f"{path}.{k}" if path else str(k), v)
                                     for k, v in node.items())
            elif isinstance(node, dict) and step in node:
                following.append((f"{path}.{step}" if path else step, node[step]))
        nodes = following
    return nodes


"""Shared by the scripts that run in the generators' environment (not imported by pytest)."""

from __future__ import annotations

import importlib
import pkgutil
import sys
from typing import Any


def load(generated: str) -> tuple[Any, Any, dict[str, Any]]:
    """(the generated client package, the pydantic models module, {snake op id: module})."""
    sys.path.insert(0, generated)
    client = importlib.import_module("pms_client")
    models = importlib.import_module("pms_models")
    api = importlib.import_module("pms_client.api")
    ops = {}
    for info in pkgutil.walk_packages(api.__path__, "pms_client.api."):
        if not info.ispkg:
            ops[info.name.rsplit(".", 1)[-1]] = importlib.import_module(info.name)
    return client, models, ops


def snake(op_id: str) -> str:
    out = ""
    for ch in op_id:
        out += ("_" + ch.lower()) if ch.isupper() else ch
    return out

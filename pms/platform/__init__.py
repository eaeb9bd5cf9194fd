"""Clients of the platform services (payments, ledger, email, storage, locks, schedules, fiscal),
built from settings.

`PMS_PLATFORM_URL=embedded` gives in-process sandboxes with the same contracts; otherwise HTTP
clients call the gateway under `/proxy/{service}/v1/...`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pms.config import Settings

# the modules other packages may import (tests/unit/test_package_surfaces.py); the rest
# are this package's own
PUBLIC_MODULES = (
    "email", "fiscal", "ledger", "locks", "payments", "trace",
)


@dataclass
class Platform:
    """The bundle of platform clients injected into resources, services and actors."""

    settings: Settings
    clients: dict[str, Any] = field(default_factory=dict)

    def __getattr__(self, name: str) -> Any:
        clients = self.__dict__.get("clients", {})
        if name in clients:
            return clients[name]
        raise AttributeError(name)


def build_platform(settings: Settings) -> Platform:
    """Build every platform client for `settings` (embedded sandboxes or gateway clients)."""
    platform = Platform(settings=settings)
    for name, factory in _factories().items():
        platform.clients[name] = factory(settings)
    return platform


# name -> module exposing `build(settings)`; one line per platform service client.
CLIENT_MODULES: dict[str, str] = {
    "payments": "pms.platform.payments",
    "ledger": "pms.platform.ledger",
    "email": "pms.platform.email",
    "storage": "pms.platform.storage",  # property images
    "locks": "pms.platform.locks",
    "schedules": "pms.platform.schedules",
    "fiscal": "pms.platform.fiscal",  # fiscal signer / registry of documents
}


def _factories() -> dict[str, Any]:
    import importlib

    return {name: importlib.import_module(module).build for name, module in CLIENT_MODULES.items()}

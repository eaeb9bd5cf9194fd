"""Shared steps of the kiosk tests: a configured hotel, kiosk tokens, lookups."""

from __future__ import annotations

from typing import Any

from pms.devkeys import mint_token
from pms.schemas.kiosk import KioskConfigIn
from pms.services.kiosk import kiosk

KIOSK_SCOPES = ["hotel:pms:kiosk:read", "hotel:pms:kiosk:write"]
ALL_MODES = ("CHECK_IN", "CHECK_OUT", "COLLECT_KEY", "WALK_IN")
TERMINAL = "kiosk-lobby-1"


def configure(ctx: Any, hotel: Any, modes: tuple[str, ...] = ALL_MODES, *,
              lockdown: bool = False, max_keys_per_stay: int = 3) -> None:
    kiosk.put_config(ctx, hotel.id, KioskConfigIn(enabled_modes=list(modes),
                                                  add_on_package_codes=[], lockdown=lockdown,
                                                  max_keys_per_stay=max_keys_per_stay))


def kiosk_token(api: Any, sub: str = TERMINAL, scopes: list[str] | None = None) -> str:
    return mint_token(api.settings, env_id=api.env_id, client_kind="kiosk", sub=sub,
                      scopes=KIOSK_SCOPES if scopes is None else scopes)


def lookup(api: Any, hotel: Any, token: str, **body: Any) -> Any:
    return api.post(f"/v1/properties/{hotel.id}/kiosk/lookup", body, token=token)


def session_for(api: Any, hotel: Any, token: str, row: Any) -> str:
    """Look `row` up by its last name and confirmation number; the session token."""
    resp = lookup(api, hotel, token, last_name=row.guest_last_name,
                  confirmation_number=row.confirmation_number)
    assert resp.status_code == 200, resp.text
    return resp.json["kiosk_session"]


def with_session(session: str) -> dict[str, str]:
    return {"X-Kiosk-Session": session}

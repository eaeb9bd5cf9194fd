"""Start-up refusals: a production process never falls back to a development default.

Every variable has an embedded default so that `make run` serves on a fresh machine (CONTRACT
§1). Two of those defaults are development stand-ins that must never serve real traffic:

- `PMS_JWKS_URL` unset -> the development key set, whose private key lies beside it: anyone who
  can read the file can mint a token for any env and any scope;
- `PMS_PLATFORM_URL` unset -> the in-process sandboxes: every card payment "succeeds".

They are taken only on the embedded default, i.e. the SQLite database and the stub broker
(`Settings.development`). With PostgreSQL or AMQP configured, a process that would read one of
them while it is unset refuses to start and names it. An explicit value is always allowed
(`PMS_PLATFORM_URL=embedded`, a `file://` key set: tests and demos), except a plain `http://`
key set outside the embedded default (the keys that decide who may do what, readable and
replaceable by anyone on the path).

Which process reads what: the web (gunicorn's `web`, `pms-cli serve`) verifies tokens and calls
the platform; the worker, the relay (whose subscribers run actors) and the platform consumer
call the platform only.
"""

from __future__ import annotations

from pms.config import Settings

WEB = ("PMS_JWKS_URL", "PMS_PLATFORM_URL")
PLATFORM_ONLY = ("PMS_PLATFORM_URL",)

_HINTS = {
    "PMS_JWKS_URL": "the identity provider's key set (https://.../jwks.json, or a file:// key "
                    "set you manage)",
    "PMS_PLATFORM_URL": "the platform gateway's base URL (or `embedded` for the in-process "
                        "sandboxes, card payments included)",
}


class UnsafeConfiguration(RuntimeError):
    """Raised when a process is configured to serve with a development stand-in."""


def development_fallbacks(settings: Settings, reads: tuple[str, ...] = WEB) -> list[str]:
    """What is wrong with `settings` for a process that reads the variables `reads`; empty on
    the embedded default."""
    if settings.development:
        return []
    backing = "PostgreSQL" if settings.is_postgres else "AMQP"
    problems = [f"{name} is not set: with {backing} configured there is no development "
                f"default (give it {_HINTS[name]})"
                for name in reads if name in settings.defaulted]
    if "PMS_JWKS_URL" in reads and settings.jwks_url.lower().startswith("http://"):
        problems.append("PMS_JWKS_URL is a plain http:// URL: outside the embedded default the "
                        "key set must come over https:// (or be a file:// key set)")
    return problems


def refuse_development_fallbacks(settings: Settings, process: str,
                                 reads: tuple[str, ...] = WEB) -> None:
    """Raise UnsafeConfiguration naming every variable at fault."""
    problems = development_fallbacks(settings, reads)
    if problems:
        raise UnsafeConfiguration(f"{process} refuses to start: " + "; ".join(problems))

"""Retention (GDPR Art. 5(1)(e)): keep nothing longer than needed.

Three rules, each in days, per property (the `privacy` module settings, env-wide or one
property's: `profile_retention_days`, `registration_retention_days`, `message_retention_days`),
falling back to the environment so an operator changes the defaults without a deploy:
- profiles, `PMS_PRIVACY_PROFILE_RETENTION_DAYS` (default 1095, three years): a guest profile
  created before the cut-off whose newest stay departed before it (or that never stayed) is
  erased as a request would erase it (pms.services.privacy.erasure: the same anonymization,
  the same legal holds; a profile with an unfinished stay or a balance due is skipped and
  reported). A profile known to several properties (where it was created, where it stayed) is
  kept for the longest of their rules: the longest applicable hold wins.
- registrations, `PMS_PRIVACY_REGISTRATION_RETENTION_DAYS` (default 365): a finished stay's
  registration (the pre-check-in identity data) is cleared that many days after departure, by
  the rule of the stay's property.
- messages, `PMS_PRIVACY_MESSAGE_RETENTION_DAYS` (default 730): the subject and body of a
  finished stay's messages are removed that many days after departure (the message row stays:
  when, which channel, delivered or not).

`purge(ctx, dry_run=..., progress=...)` is the plain function the `privacy.retention` schedule
calls once a day per env (pms.scheduling); `pms-cli privacy purge` runs it with a progress bar.
A dry run counts and changes nothing; the report gives each property's rules and cut-offs.
Company profiles are a business's, not a person's, and are never purged here.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from datetime import date, datetime, timedelta
from typing import Any

import peewee

from pms.context import Ctx
from pms.db.uow import read_scope, unit_of_work
from pms.errors import PmsError
from pms.models import Profile, Property, Reservation, ReservationMessage
from pms.services.privacy import erasure
from pms.services.privacy import schemas as s

FINISHED = ("CHECKED_OUT", "CANCELLED", "NO_SHOW")
REMOVED_BODY = "[removed: retention]"
_RULES = {"profiles": ("profile_retention_days", "PMS_PRIVACY_PROFILE_RETENTION_DAYS", 1095),
          "registrations": ("registration_retention_days",
                            "PMS_PRIVACY_REGISTRATION_RETENTION_DAYS", 365),
          "messages": ("message_retention_days", "PMS_PRIVACY_MESSAGE_RETENTION_DAYS", 730)}


def retention_days() -> dict[str, int]:
    """The env-wide defaults (the environment's, else the built-in ones)."""
    return {rule: int(os.environ.get(var, str(default)))
            for rule, (_field, var, default) in _RULES.items()}


def property_rules(ctx: Ctx) -> dict[uuid.UUID, dict[str, int]]:
    """{property id: {rule: days}} for every property of the env (call inside a scope): the
    property's `privacy` settings, then the env's, then the defaults of `retention_days`."""
    from pms.services.catalog.settings import effective

    defaults = retention_days()
    out = {}
    for prop in Property.select(Property.id).order_by(Property.id):
        module = effective(ctx, prop.id).get("privacy", {})
        out[prop.id] = {rule: module.get(field) or defaults[rule]
                        for rule, (field, _var, _default) in _RULES.items()}
    return out


def _stale_profiles(now: datetime, rules: dict[uuid.UUID, dict[str, int]]
                    ) -> list[tuple[uuid.UUID, uuid.UUID | None]]:
    """(profile id, a property it stayed at or came from) of the guest profiles past the
    longest profile rule of the properties they are known to."""
    default = retention_days()["profiles"]
    shortest = min([r["profiles"] for r in rules.values()] or [default])
    loose = now - timedelta(days=shortest)  # no profile is stale before the shortest rule
    unfinished = Reservation.select(Reservation.guest_profile).where(
        Reservation.guest_profile.is_null(False) & ~(Reservation.status.in_(FINISHED)))
    candidates = Profile.select(Profile.id, Profile.origin_property_id, Profile.created_at).where(
        (Profile.kind == "GUEST") & (Profile.created_at < loose)
        & (Profile.last_name.is_null() | ~Profile.last_name.startswith("erased-"))
        & Profile.id.not_in(unfinished)).order_by(Profile.id)
    out = []
    for row in candidates:
        stays = list(Reservation.select(Reservation.property, Reservation.departure_date).where(
            Reservation.guest_profile == row.id).tuples())
        known = {p for p, _ in stays} | ({row.origin_property_id} - {None})
        days = max([rules[p]["profiles"] for p in known if p in rules] or [default])
        cutoff = now - timedelta(days=days)
        newest = max([d for _, d in stays] or [None], key=lambda d: d or date.min)
        if row.created_at < cutoff and (newest is None or newest < cutoff.date()):
            out.append((row.id, row.origin_property_id or (stays[0][0] if stays else None)))
    return out


def _past(rules: dict[uuid.UUID, dict[str, int]], rule: str, now: datetime,
          *extra: Any) -> list[uuid.UUID]:
    """The finished stays departed before their property's `rule` cut-off (and `extra`)."""
    ids: list[uuid.UUID] = []
    for property_id, days in rules.items():
        cutoff = (now - timedelta(days=days[rule])).date()
        where = ((Reservation.property == property_id) & Reservation.status.in_(FINISHED)
                 & (Reservation.departure_date < cutoff))
        for condition in extra:
            where &= condition
        ids.extend(r.id for r in Reservation.select(Reservation.id).where(where))
    return ids


def purge(ctx: Ctx, *, dry_run: bool = False,
          progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Apply the env's retention rules. Returns the report: each property's rules and cut-offs,
    how many profiles were (or would be) erased, skipped (with why), registrations cleared and
    messages emptied."""
    with read_scope(ctx):
        rules = property_rules(ctx)
        codes = {p.id: p.code for p in Property.select(Property.id, Property.code)}
        stale = _stale_profiles(ctx.now, rules)
        registration_ids = _past(rules, "registrations", ctx.now,
                                 Reservation.registration.is_null(False))
        stays = _past(rules, "messages", ctx.now)
        message_ids = [m.id for m in ReservationMessage.select(ReservationMessage.id).where(
            ReservationMessage.reservation.in_(stays)
            & ReservationMessage.body.not_in([REMOVED_BODY, erasure.ERASED_BODY]))] if stays else []
    total = len(stale) + (1 if registration_ids else 0) + (1 if message_ids else 0)
    defaults = retention_days()
    profile_cutoff = ctx.now - timedelta(days=defaults["profiles"])
    report: dict[str, Any] = {
        "dry_run": dry_run, "rules_days": defaults,
        "profile_cutoff": profile_cutoff.isoformat(),
        "registration_cutoff": (ctx.now - timedelta(days=defaults["registrations"])
                                ).date().isoformat(),
        "properties": {codes.get(pid, str(pid)): {
            **days, "cutoffs": {rule: (ctx.now - timedelta(days=d)).date().isoformat()
                                for rule, d in days.items()}} for pid, days in rules.items()},
        "profiles": len(stale), "profiles_erased": 0, "skipped": [],
        "registrations_cleared": len(registration_ids), "messages_removed": len(message_ids)}
    if dry_run:
        return report
    done = 0

    def tick() -> None:
        nonlocal done
        done += 1
        if progress:
            progress(done, total)

    if registration_ids:
        with unit_of_work(ctx) as uow:
            cleared = Reservation.update(registration=peewee.SQL("NULL")).where(
                Reservation.id.in_(registration_ids)).execute()
            uow.audit("retention.registrations_cleared", RetentionRun(ctx.env_id),
                      after={"reservations": cleared, "rules": _rule_days(rules, "registrations",
                                                                          codes)})
        tick()
    if message_ids:
        with unit_of_work(ctx) as uow:
            removed = ReservationMessage.update(subject=None, body=REMOVED_BODY).where(
                ReservationMessage.id.in_(message_ids)).execute()
            uow.audit("retention.messages_removed", RetentionRun(ctx.env_id),
                      after={"messages": removed, "rules": _rule_days(rules, "messages", codes)})
        tick()
    for profile_id, property_id in stale:
        try:
            erasure.erase(ctx, property_id, profile_id, s.ErasureIn())
            report["profiles_erased"] += 1
        except PmsError as exc:
            report["skipped"].append({"profile_id": str(profile_id), "reason": exc.detail})
        tick()
    return report


def _rule_days(rules: dict[uuid.UUID, dict[str, int]], rule: str,
               codes: dict[uuid.UUID, str]) -> dict[str, int]:
    return {codes.get(pid, str(pid)): days[rule] for pid, days in rules.items()}


class RetentionRun:
    """The journal's target of an env-wide retention run."""

    def __init__(self, env_id: uuid.UUID) -> None:
        self.id = env_id

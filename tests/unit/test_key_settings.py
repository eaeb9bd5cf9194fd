"""The settings of keys and events: the key set's maximum age and the platform event source are read from
the environment, bounded, and refused at start-up when malformed."""

from __future__ import annotations

import pytest

from pms.config import load_settings


def test_jwks_max_age_defaults_to_five_minutes_and_is_bounded():
    assert load_settings({}).jwks_max_age_s == 300.0
    assert load_settings({"PMS_JWKS_MAX_AGE_SECONDS": "60"}).jwks_max_age_s == 60.0
    assert load_settings({"PMS_JWKS_MAX_AGE_SECONDS": " "}).jwks_max_age_s == 300.0
    for bad in ("0", "3601", "-5", "nan", "inf", "five minutes"):
        with pytest.raises(ValueError, match="PMS_JWKS_MAX_AGE_SECONDS"):
            load_settings({"PMS_JWKS_MAX_AGE_SECONDS": bad})


def test_platform_event_source_defaults_to_platform():
    assert load_settings({}).platform_event_source == "platform"
    assert load_settings({"PMS_PLATFORM_EVENT_SOURCE": ""}).platform_event_source == "platform"
    given = load_settings({"PMS_PLATFORM_EVENT_SOURCE": "//platform.example/envs"})
    assert given.platform_event_source == "//platform.example/envs"


def test_defaulted_names_only_the_unset_development_fallbacks():
    assert load_settings({}).defaulted == {"PMS_JWKS_URL", "PMS_PLATFORM_URL"}
    given = load_settings({"PMS_JWKS_URL": "file:///k/jwks.json", "PMS_PLATFORM_URL": "embedded"})
    assert given.defaulted == frozenset()
    assert load_settings({"PMS_PLATFORM_URL": "embedded"}).defaulted == {"PMS_JWKS_URL"}

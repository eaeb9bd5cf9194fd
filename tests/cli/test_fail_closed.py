"""production never falls back to development.

Outside the embedded default (SQLite and the stub broker), a process that would read an unset
PMS_JWKS_URL (the development key set, private key beside it) or PMS_PLATFORM_URL (the sandbox,
where every card payment succeeds) refuses to start and names the variable: the web (the
Procfile's gunicorn, `pms-cli serve`), the worker (dramatiq), the relay and the platform
consumer. Explicit values stay allowed; a plain http:// key set is refused outside the
embedded default. The dev commands never write a key set they did not make.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import uuid
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app
from pms.config import load_settings
from pms.devkeys import ForeignKeySet, generate_keys, marker_path
from pms.startup import PLATFORM_ONLY, WEB, development_fallbacks
from tests.e2e.procfile import BIN, ROOT, procfile

runner = CliRunner()
PG = "postgresql://app:pass@127.0.0.1:1/nowhere"  # never reached: the refusal comes first
AMQP = "amqp://guest:guest@127.0.0.1:1/%2F"


def _problems(env: dict[str, str], reads: tuple[str, ...] = WEB) -> str:
    return " | ".join(development_fallbacks(load_settings(env), reads))


def test_the_embedded_default_keeps_its_development_defaults(tmp_path):
    assert _problems({"PMS_HOME": str(tmp_path)}) == ""
    # an http:// key set is a development convenience there
    assert _problems({"PMS_HOME": str(tmp_path), "PMS_JWKS_URL": "http://127.0.0.1:9/j"}) == ""


@pytest.mark.parametrize("backing", [{"PMS_DATABASE_URL": PG},
                                     {"PMS_BROKER_URL": AMQP},
                                     {"PMS_DATABASE_URL": PG, "PMS_BROKER_URL": AMQP}])
def test_production_names_every_unset_fallback(tmp_path, backing):
    env = {"PMS_HOME": str(tmp_path), **backing}
    both = _problems(env)
    assert "PMS_JWKS_URL is not set" in both and "PMS_PLATFORM_URL is not set" in both
    assert _problems({**env, "PMS_JWKS_URL": ""}).count("not set") == 2  # empty is unset
    only_platform = _problems(env, PLATFORM_ONLY)
    assert "PMS_PLATFORM_URL" in only_platform and "PMS_JWKS_URL" not in only_platform
    # explicit values are allowed: a file:// key set, the sandboxes by name, https
    for jwks in ("file:///etc/idp/jwks.json", "https://idp.example/jwks.json"):
        assert _problems({**env, "PMS_JWKS_URL": jwks, "PMS_PLATFORM_URL": "embedded"}) == ""
    # a plain http:// key set is not
    refused = _problems({**env, "PMS_JWKS_URL": "http://idp.example/jwks.json",
                         "PMS_PLATFORM_URL": "https://gw.example"})
    assert "PMS_JWKS_URL is a plain http:// URL" in refused


def _sub_env(**over: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PMS_")}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env.update(over)
    return env


def _run(command: list[str], env: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=ROOT, env={**env, "PMS_HOME": str(tmp_path)},
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("unset", ["PMS_JWKS_URL", "PMS_PLATFORM_URL"])
def test_the_procfile_web_refuses_to_start_naming_the_variable(tmp_path, unset):
    given = {"PMS_JWKS_URL": f"file://{tmp_path}/idp/jwks.json", "PMS_PLATFORM_URL": "embedded"}
    given.pop(unset)
    env = _sub_env(PMS_DATABASE_URL=PG, PORT="0", WEB_CONCURRENCY="1",
                   PMS_GUNICORN_CONTROL_SOCKET="off", **given)
    done = _run(shlex.split(procfile()["web"]), env, tmp_path)
    assert done.returncode != 0
    output = done.stdout + done.stderr
    assert f"web refuses to start: {unset} is not set" in output, output
    other = ({"PMS_JWKS_URL", "PMS_PLATFORM_URL"} - {unset}).pop()
    assert f"{other} is not set" not in output
    assert not (tmp_path / "dev-jwks.json").exists()  # no development key set was made


def test_the_procfile_worker_refuses_to_start_without_the_platform_url(tmp_path):
    env = _sub_env(PMS_DATABASE_URL=PG, PMS_BROKER_URL=AMQP)
    command = [*shlex.split(procfile()["worker"])]
    command[command.index("--processes") + 1] = "1"
    command[command.index("--threads") + 1] = "1"
    done = _run(command, env, tmp_path)
    output = done.stdout + done.stderr
    assert done.returncode != 0, output
    assert "worker refuses to start: PMS_PLATFORM_URL is not set" in output, output


@pytest.mark.parametrize("args,process", [
    (["outbox", "relay", "--follow"], "the relay"),
    (["platform", "consume", "--idle-timeout", "1"], "the platform consumer"),
    (["serve", "--no-prepare"], "pms-cli serve"),
])
def test_serving_commands_refuse_to_start_naming_the_variable(tmp_path, args, process):
    env = {"PMS_HOME": str(tmp_path), "PMS_DATABASE_URL": PG, "PMS_BROKER_URL": AMQP,
           "PMS_JWKS_URL": "", "PMS_PLATFORM_URL": ""}
    result = runner.invoke(app, args, env=env)
    assert result.exit_code == 2, result.output
    assert f"{process} refuses to start: " in result.output
    assert "PMS_PLATFORM_URL is not set" in result.output
    assert ("PMS_JWKS_URL is not set" in result.output) == (process == "pms-cli serve")


def test_serve_refuses_an_http_key_set_outside_the_embedded_default(tmp_path):
    env = {"PMS_HOME": str(tmp_path), "PMS_DATABASE_URL": PG,
           "PMS_JWKS_URL": "http://idp.example/jwks.json", "PMS_PLATFORM_URL": "embedded"}
    result = runner.invoke(app, ["serve", "--no-prepare"], env=env)
    assert result.exit_code == 2 and "plain http://" in result.output, result.output


# -- the dev commands never write a key set they did not make ---------------------------------

@pytest.fixture
def mounted(tmp_path):
    """An identity provider's key set mounted where PMS_JWKS_URL points."""
    path = tmp_path / "idp" / "jwks.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"keys": [{"kid": "idp-1", "kty": "RSA", "n": "AQAB",
                                          "e": "AQAB"}]}))
    return path


def test_dev_token_and_keys_leave_a_foreign_key_set_alone(tmp_path, mounted):
    before = mounted.read_bytes()
    env = {"PMS_HOME": str(tmp_path), "PMS_JWKS_URL": f"file://{mounted}"}
    for args in (["dev", "token", "--env", str(uuid.uuid4())], ["dev", "keys"],
                 ["dev", "keys", "--force"], ["serve"]):
        result = runner.invoke(app, args, env=env)
        assert result.exit_code == 2, (args, result.output)
        assert "did not make" in result.output
        assert mounted.read_bytes() == before
        assert sorted(p.name for p in mounted.parent.iterdir()) == ["jwks.json"]


def test_a_key_set_made_by_the_dev_commands_may_be_made_again(tmp_path):
    settings = load_settings({"PMS_HOME": str(tmp_path)})
    first = generate_keys(settings)
    assert marker_path(settings).exists()
    assert generate_keys(settings) == first  # kept
    second = generate_keys(settings, force=True)
    assert second != first  # ours: replaced on request
    # someone puts their own key set over ours: it is no longer ours
    settings.jwks_path.write_text(json.dumps({"keys": []}))
    with pytest.raises(ForeignKeySet):
        generate_keys(settings, force=True)
    settings.private_jwk_path.unlink()
    with pytest.raises(ForeignKeySet):
        generate_keys(settings)
    assert json.loads(settings.jwks_path.read_text()) == {"keys": []}


def test_an_older_dev_key_pair_without_the_marker_is_still_read(tmp_path):
    """Keys made before the marker existed (a checkout's var/): read, never rewritten."""
    settings = load_settings({"PMS_HOME": str(tmp_path)})
    kid = generate_keys(settings)
    marker_path(settings).unlink()
    before = settings.jwks_path.read_bytes()
    assert generate_keys(settings) == kid
    with pytest.raises(ForeignKeySet):
        generate_keys(settings, force=True)
    assert settings.jwks_path.read_bytes() == before

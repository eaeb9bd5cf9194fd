"""`pms-cli dev keys` and `dev token` run on the embedded default only: under a production
configuration (PostgreSQL, or an AMQP broker) they refuse, print no token and write no key
pair, even with a local file:// key set named."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app

PRODUCTION = {
    "postgres": {"PMS_DATABASE_URL": "postgresql://app:pass@db.internal:5432/pms"},
    "amqp": {"PMS_BROKER_URL": "amqp://guest:guest@mq.internal:5672/%2F"},
    "both": {"PMS_DATABASE_URL": "postgresql://app:pass@db.internal:5432/pms",
             "PMS_BROKER_URL": "amqp://guest:guest@mq.internal:5672/%2F"},
}


def _env(tmp_path: Path, **over: str) -> dict[str, str]:
    url = f"sqlite:///{tmp_path}/cli.db"
    return {"PMS_DATABASE_URL": url, "PMS_MIGRATION_DATABASE_URL": url,
            "PMS_BROKER_URL": "stub://", "PMS_HOME": str(tmp_path / "home"),
            "PMS_JWKS_URL": f"file://{tmp_path}/keys/jwks.json", **over}


@pytest.mark.parametrize("config", sorted(PRODUCTION))
@pytest.mark.parametrize("args", [["dev", "keys"], ["dev", "keys", "--force"],
                                  ["dev", "token", "--env", str(uuid.uuid4())]])
def test_dev_commands_refuse_a_production_configuration(tmp_path, config, args):
    result = CliRunner().invoke(app, args, env=_env(tmp_path, **PRODUCTION[config]))
    assert result.exit_code == 1, result.output
    assert "production configuration" in result.stderr and "refused" in result.stderr
    assert result.stdout.strip() == ""
    assert not (tmp_path / "keys").exists()
    assert not list(tmp_path.rglob("*.json"))


def test_the_embedded_default_still_gets_its_token(tmp_path):
    result = CliRunner().invoke(app, ["dev", "token", "--env", str(uuid.uuid4())],
                                env=_env(tmp_path))
    assert result.exit_code == 0, result.output
    assert result.stdout.strip().count(".") == 2
    assert (tmp_path / "keys" / "jwks.json").exists()

"""The embedded console gateway hands the demo token only to a request that names this server
at a loopback address: `Host` is 127.0.0.1, localhost or [::1] at the served port, and
`Origin`, when sent, is that same address. A DNS-rebinding page or a local tunnel (peer on
loopback, another host name) gets 401, not staff rights."""

from __future__ import annotations

import falcon.testing
import pytest

from pms.app import create_app
from pms.devkeys import mint_token
from tests.helpers import assert_problem

MARK = {"X-PMS-Console": "1"}
PORT = 8123


@pytest.fixture
def client(tmp_path, settings, database, clock, env_id):
    token_file = tmp_path / "demo-token"
    token_file.write_text(mint_token(settings, env_id=env_id) + "\n")
    return falcon.testing.TestClient(create_app(settings.with_(console_token_file=token_file),
                                                db=database, clock=clock))


def _get(client, host, **headers):
    return client.simulate_get("/v1/admin/policy-sets", remote_addr="127.0.0.1", port=PORT,
                               headers={**MARK, "Host": host, **headers})


def test_the_served_loopback_address_gets_the_demo_token(client):
    for host in (f"127.0.0.1:{PORT}", f"localhost:{PORT}", f"[::1]:{PORT}", f"LOCALHOST:{PORT}"):
        assert _get(client, host).status_code == 200, host
        assert _get(client, host, Origin=f"http://{host}",
                    **{"Sec-Fetch-Site": "same-origin"}).status_code == 200, host


def test_rebinding_and_tunnels_are_refused(client):
    refused = [
        _get(client, f"attacker.example:{PORT}", Origin=f"http://attacker.example:{PORT}",
             **{"Sec-Fetch-Site": "same-origin"}),  # DNS rebinding to 127.0.0.1
        _get(client, "abcd-1234.ngrok-free.app"),  # a tunnel's public name
        _get(client, f"127.0.0.1.nip.io:{PORT}"),
        _get(client, "127.0.0.1:9999"),  # another port than the served one
        _get(client, "127.0.0.1"),  # (port 80 implied)
        _get(client, f"127.0.0.1:{PORT}", Origin="http://attacker.example"),
        _get(client, f"127.0.0.1:{PORT}", Origin="null"),
        _get(client, f"127.0.0.1:{PORT}", Origin=f"https://127.0.0.1:{PORT}.evil.example"),
        _get(client, ""),
    ]
    for resp in refused:
        assert_problem(resp, 401, "missing_token")
    posted = client.simulate_post("/v1/admin/policy-sets", remote_addr="127.0.0.1", port=PORT,
                                  json={"name": "rebind-test", "rules": []},
                                  headers={**MARK, "Host": f"attacker.example:{PORT}",
                                           "Origin": f"http://attacker.example:{PORT}"})
    assert_problem(posted, 401, "missing_token")

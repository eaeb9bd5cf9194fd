"""Clients generated from the served OpenAPI document.

The generators, `openapi-python-client` and `datamodel-code-generator`, live in a virtual
environment of their own, `.venv-clientgen`, pinned by tests/clientgen/requirements.txt (`make
test` makes it; `ensure_generators` makes it too when pytest runs alone, under a file lock for
xdist's workers). `generated_client` (a session fixture) serves the app on a real socket, lets
`openapi-python-client generate --url` read `GET /v1/openapi.json` without a token, makes the
pydantic models from the same bytes, and fails on any warning either tool prints. The output is
kept under `.venv-clientgen/generated/<hash of document and pins>`, so a session whose document
did not change generates nothing. The generated code runs in that environment too
(tests/clientgen/drive_stay.py, parse_answers.py): it needs httpx, attrs and pydantic, which the
service's own environment does not.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

import pytest

ROOT = Path(__file__).resolve().parents[2]
VENV = Path(os.environ.get("PMS_CLIENTGEN_VENV", ROOT / ".venv-clientgen"))
HERE = Path(__file__).resolve().parent
REQUIREMENTS = HERE / "requirements.txt"
PACKAGE, MODELS = "pms_client", "pms_models"


def ensure_generators() -> Path:
    """The generators' environment, made (once) when missing or pinned otherwise."""
    stamp = VENV / ".installed"
    wanted = REQUIREMENTS.read_text()
    if stamp.exists() and stamp.read_text() == wanted:
        return VENV
    VENV.parent.mkdir(parents=True, exist_ok=True)
    with open(str(VENV) + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (stamp.exists() and stamp.read_text() == wanted):
            shutil.rmtree(VENV, ignore_errors=True)
            subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
            subprocess.run([str(VENV / "bin" / "pip"), "install", "--quiet", "-r",
                            str(REQUIREMENTS)], check=True)
            stamp.write_text(wanted)
    return VENV


class _Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass


class _ThreadingServer(WSGIServer):
    daemon_threads = True

    def process_request(self, request: Any, client_address: Any) -> None:
        thread = threading.Thread(target=self._one, args=(request, client_address), daemon=True)
        thread.start()

    def _one(self, request: Any, client_address: Any) -> None:
        from pms.db.database import db

        try:
            self.finish_request(request, client_address)
        finally:
            self.shutdown_request(request)
            # A request thread keeps its pooled connection for the next request, as a
            # gunicorn thread does; this thread ends here, so it gives the connection back
            # (else each request would hold one of the pool's until the pool ran out).
            if db.obj is not None and not db.is_closed():
                db.close()


@contextlib.contextmanager
def serve(app: Any) -> Iterator[str]:
    """The WSGI app on 127.0.0.1 (a free port) in a thread; yields its base URL."""
    server = make_server("127.0.0.1", 0, app, server_class=_ThreadingServer,
                         handler_class=_Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


def _run(args: list[str]) -> str:
    done = subprocess.run(args, capture_output=True, text=True, timeout=600, cwd=ROOT)
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"{args[0]} failed:\n{output}"
    assert "warning" not in output.lower(), f"{Path(args[0]).name} warned:\n{output}"
    return output


def generate(base_url: str) -> Path:
    """Both generators run on the document `base_url` serves (no token sent); the directory
    that holds `pms_client` and `pms_models.py`."""
    venv = ensure_generators()
    url = f"{base_url}/v1/openapi.json"
    with urllib.request.urlopen(url, timeout=60) as answer:  # noqa: S310 - a local test server
        document = answer.read()
    key = hashlib.sha256(document + REQUIREMENTS.read_bytes()
                         + (HERE / "__init__.py").read_bytes()).hexdigest()[:16]
    out = venv / "generated" / key
    if (out / "complete").exists():
        return out
    work = venv / "generated" / f"{key}.{os.getpid()}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    (work / "openapi.json").write_bytes(document)
    (work / "config.yaml").write_text("post_hooks: []\n")
    bin_ = venv / "bin"
    _run([str(bin_ / "openapi-python-client"), "generate", "--url", url, "--meta", "none",
          "--output-path", str(work / PACKAGE), "--config", str(work / "config.yaml")])
    _run([str(bin_ / "datamodel-codegen"), "--input", str(work / "openapi.json"),
          "--input-file-type", "openapi", "--output", str(work / f"{MODELS}.py"),
          "--output-model-type", "pydantic_v2.BaseModel", "--formatters", "builtin"])
    (work / "complete").write_text(key)
    try:
        work.rename(out)
    except OSError:  # another worker got there first: its output is the same
        shutil.rmtree(work, ignore_errors=True)
    return out


def run_in_clientgen(script: str, *args: str) -> str:
    """Run tests/clientgen/<script> with the generators' Python; its stdout."""
    done = subprocess.run([str(VENV / "bin" / "python"), str(HERE / script), *args],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, f"{script} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="session")
def generated_client(base_settings: Any, _sqlite_db: Any) -> Path:
    """The generated code's directory. The app that serves the document is bound to the
    session's SQLite file only while it is built: the database the requesting test bound
    (PostgreSQL, say) is bound again afterwards (the document itself reads no database)."""
    from pms.app import create_app
    from pms.db.database import db as db_proxy

    bound = db_proxy.obj
    try:
        app = create_app(base_settings, db=_sqlite_db)
    finally:
        db_proxy.initialize(bound)
    with serve(app) as base_url:
        return generate(base_url)

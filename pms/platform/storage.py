"""Client of the object-storage service (SPEC: property image object storage is delegated).

The `ObjectStore` protocol; `LocalObjectStore`, the embedded default, which keeps objects as
files under `$PMS_HOME/storage/` (written to a temporary file, then renamed into place); and
`HttpObjectStore`, which calls the service through the gateway (`PUT|DELETE
/proxy/storage/v1/objects/{key}` with a machine token, the checksum in
`X-Checksum-Sha256`). Never call it inside a unit of work: it is an external call.
Transient failures raise `StorageUnavailable` (503).
"""

from __future__ import annotations

import os
import re
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Protocol

from pms.config import Settings
from pms.errors import DependencyUnavailable
from pms.platform.payments import MachineToken, machine_token

STORAGE_SCOPES = ("platform:storage:objects:write",)
# keys are ours (`{env}/properties/{id}/images/{id}.{ext}`): nothing that could climb a path
_KEY_OK = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)*$").match


class StorageUnavailable(DependencyUnavailable):
    """Raised when the object-storage service cannot be reached or fails."""

    code = "storage_unavailable"


class ObjectStore(Protocol):
    def put(self, key: str, data: bytes, *, content_type: str, sha256: str) -> None: ...

    def get(self, key: str) -> bytes | None: ...

    def delete(self, key: str) -> None: ...


def check_key(key: str) -> str:
    if not _KEY_OK(key) or ".." in key or len(key) > 300:
        raise ValueError(f"not an object key: {key!r}")
    return key


class LocalObjectStore:
    """Objects as files under `root` (the embedded default: `$PMS_HOME/storage`)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def _path(self, key: str) -> Path:
        return self.root / check_key(key)

    def put(self, key: str, data: bytes, *, content_type: str, sha256: str) -> None:
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".upload-")
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            os.replace(tmp, path)
        except OSError as exc:
            raise StorageUnavailable(f"the local object store failed: {type(exc).__name__}") from exc

    def get(self, key: str) -> bytes | None:
        path = self._path(key)
        return path.read_bytes() if path.is_file() else None

    def delete(self, key: str) -> None:
        try:
            self._path(key).unlink(missing_ok=True)
        except OSError as exc:
            raise StorageUnavailable(f"the local object store failed: {type(exc).__name__}") from exc


class HttpObjectStore:
    """The object-storage service through the gateway (`/proxy/storage/v1/objects/{key}`)."""

    def __init__(self, base_url: str, token: MachineToken, timeout_s: float = 30.0) -> None:
        self.base = f"{base_url.rstrip('/')}/proxy/storage/v1/objects/"
        self.token = token
        self.timeout_s = timeout_s

    def _call(self, method: str, key: str, data: bytes | None = None,
              headers: dict[str, str] | None = None, *, retry_auth: bool = True) -> bytes | None:
        try:
            bearer = self.token.get()
        except DependencyUnavailable as exc:
            raise StorageUnavailable(f"no machine token for storage: {exc.detail}") from exc
        url = self.base + urllib.parse.quote(check_key(key), safe="/")
        request = urllib.request.Request(url, data=data, method=method, headers={
            "Authorization": f"Bearer {bearer}", **(headers or {})})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as resp:
                return bytes(resp.read())
        except urllib.error.HTTPError as exc:
            if exc.code == 401 and retry_auth:
                self.token.invalidate()
                return self._call(method, key, data, headers, retry_auth=False)
            if exc.code == 404 and method in ("GET", "DELETE"):
                return None
            raise StorageUnavailable(f"{method} object answered {exc.code}",
                                     status_code=exc.code) from exc
        except OSError as exc:  # URLError, timeouts, refused
            raise StorageUnavailable(f"{method} object failed: {type(exc).__name__}") from exc

    def put(self, key: str, data: bytes, *, content_type: str, sha256: str) -> None:
        self._call("PUT", key, data, {"Content-Type": content_type,
                                      "X-Checksum-Sha256": sha256})

    def get(self, key: str) -> bytes | None:
        return self._call("GET", key)

    def delete(self, key: str) -> None:
        self._call("DELETE", key)


def build(settings: Settings) -> ObjectStore:
    """The local store under PMS_HOME, or the gateway client for a real `PMS_PLATFORM_URL`."""
    if settings.embedded_platform:
        return LocalObjectStore(settings.home / "storage")
    return HttpObjectStore(settings.platform_url, machine_token(settings, STORAGE_SCOPES))

"""What synchronous replication costs a booking: the same cluster, switched between
`synchronous_mode` on and off through Patroni's REST API (PATCH /config), measured in turns.

    .venv/bin/python -m bench.db_sync_cost [--seconds 8] [--rounds 2]

Starts the chaos tests' Patroni cluster (tests/chaos/patroni_cluster.py: etcd, two members,
HAProxy), migrates through HAProxy, seeds a hotel and starts the Procfile's `web`. Each turn
measures, through HAProxy:
- a one-row INSERT committed alone (one client, autocommit): the commit's own round trip;
- POST .../reservations with an Idempotency-Key from one client (latency) and from four
  (throughput).
Throwaway settings (fsync off, one machine, loopback): this is the replication protocol's cost,
not a disk's or a network's; between machines add the link's round trip to every commit.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from types import SimpleNamespace

import psycopg2
import requests

from pms.config import Settings
from pms.devkeys import generate_keys
from tests.chaos.patroni_cluster import PatroniCluster
from tests.chaos.test_db_failover import Load, new_key, release, seed_hotel
from tests.ops.conftest import Gunicorn


def set_synchronous(cluster: PatroniCluster, on: bool, timeout_s: float = 60.0) -> None:
    leader = cluster.wait_leader()
    req = urllib.request.Request(f"http://127.0.0.1:{leader.rest_port}/config",
                                 data=json.dumps({"synchronous_mode": on}).encode(),
                                 method="PATCH", headers={"Content-Type": "application/json"})
    urllib.request.urlopen(req, timeout=10).close()
    wanted = "sync" if on else "async"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        conn = psycopg2.connect(cluster.url("admin", port=leader.pg_port))
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT sync_state FROM pg_stat_replication")
                if [r[0] for r in cur.fetchall()] == [wanted]:
                    return
        finally:
            conn.close()
        time.sleep(0.3)
    raise TimeoutError(f"replication did not become {wanted}")


def commit_latency(cluster: PatroniCluster, seconds: float) -> list[float]:
    conn = psycopg2.connect(cluster.url("admin"))
    conn.autocommit = True
    out = []
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE IF NOT EXISTS bench_commit (id bigserial PRIMARY KEY, t text)")
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            start = time.perf_counter()
            cur.execute("INSERT INTO bench_commit (t) VALUES ('x')")
            out.append(time.perf_counter() - start)
    conn.close()
    return out


def bookings(load: Load, seconds: float, clients: int) -> tuple[list[float], int]:
    latencies: list[float] = []
    failed = [0]
    lock = threading.Lock()

    def client() -> None:
        session = requests.Session()
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            key = new_key("bench")
            path, body = load.booking(key, today=False)
            start = time.perf_counter()
            resp = session.post(load.base_url + path, json=body, headers=load.headers(key),
                                timeout=30)
            took = time.perf_counter() - start
            with lock:
                if resp.status_code == 201:
                    latencies.append(took)
                else:
                    failed[0] += 1

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return latencies, failed[0]


def ms(values: list[float]) -> str:
    return f"p50 {statistics.median(values) * 1000:.2f} ms" if values else "none"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    keydir = Path(tempfile.mkdtemp(prefix="pms-bench-keys-"))
    settings = Settings(jwks_url=f"file://{keydir}/jwks.json", home=keydir / "home")
    generate_keys(settings)
    cluster = PatroniCluster(synchronous=True).start()
    web = None
    try:
        release(cluster)
        hotel = seed_hotel(cluster.url("app"))
        database = SimpleNamespace(app_url=cluster.url("app"), owner_url=cluster.url("owner"))
        web = Gunicorn(settings, database, keydir, {"WEB_CONCURRENCY": "2", "PMS_THREADS": "4"})
        web.wait_ready(hotel.env_id, timeout_s=60)
        load = Load(web.base_url, hotel, settings)
        bookings(load, 2.0, 2)  # warm the workers' caches and pools
        results: dict[bool, dict[str, list]] = {True: {}, False: {}}
        for _ in range(args.rounds):
            for on in (True, False):
                set_synchronous(cluster, on)
                r = results[on]
                r.setdefault("commit", []).extend(commit_latency(cluster, args.seconds / 2))
                one, _ = bookings(load, args.seconds, 1)
                r.setdefault("one", []).extend(one)
                four, failed = bookings(load, args.seconds, 4)
                r.setdefault("four", []).append(len(four) / args.seconds)
                r.setdefault("failed", []).append(failed)
        for on in (True, False):
            r = results[on]
            print(f"{'synchronous ' if on else 'asynchronous'}: commit {ms(r['commit'])}; "
                  f"booking (1 client) {ms(r['one'])}; 4 clients "
                  f"{statistics.mean(r['four']):.1f} bookings/s; failed {sum(r['failed'])}")
    finally:
        if web is not None:
            web.stop()
        cluster.cleanup()


if __name__ == "__main__":
    main()

# Two commands: `make run` serves the API on the embedded default; `make test` passes the suite.
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
STAMP   = $(VENV)/.installed

.PHONY: clientgen run test test-fast test-pgbouncer lint bench chaos clean openapi fuzz simulate screenshots

$(STAMP): setup.cfg pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

# The client generators: openapi-python-client and datamodel-code-generator, pinned in
# tests/clientgen/requirements.txt, in an environment of their own (the suite generates a client
# from the served document and drives a stay through it; tests/clientgen/__init__.py).
CLIENTGEN       = .venv-clientgen
CLIENTGEN_STAMP = $(CLIENTGEN)/.installed

$(CLIENTGEN_STAMP): tests/clientgen/requirements.txt
	rm -rf $(CLIENTGEN)
	$(PYTHON) -m venv $(CLIENTGEN)
	$(CLIENTGEN)/bin/pip install --quiet -r tests/clientgen/requirements.txt
	cp tests/clientgen/requirements.txt $@

clientgen: $(CLIENTGEN_STAMP) ## the client generators' environment

run: $(STAMP)   ## serve on 127.0.0.1:8000 (SQLite + StubBroker + sandboxes); token in var/demo-token
	$(BIN)/pms-cli serve

# pytest-xdist: TEST_WORKERS processes (each with its own databases; see tests/conftest.py), the
# tests that start process trees kept on one of them (--dist loadgroup). TEST_WORKERS=0: serial.
TEST_WORKERS ?= 2
XDIST = $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadgroup)

# tests/chaos (a Patroni cluster, a three-node RabbitMQ cluster, both failing at once) runs in
# `make chaos` only: it needs Debian's patroni and etcd-server besides the suite's servers, and
# minutes of its own; the suite's short fault tests (tests/ops, tests/workers) stay in `make test`.
test: $(STAMP) $(CLIENTGEN_STAMP)  ## the whole suite (PostgreSQL and RabbitMQ tests skip locally if the servers are down)
	$(BIN)/pytest -q --durations=25 --ignore=tests/chaos $(XDIST)

test-fast: $(STAMP) $(CLIENTGEN_STAMP)
	$(BIN)/pytest -q -m "not slow" --ignore=tests/chaos $(XDIST)

# What transaction pooling can break, through PgBouncer: every route's transaction (the tenant
# context set per transaction: the tenancy walk and the unit-of-work walk cover every route) and
# the whole journeys. The parallel races stay direct (their controls hold more transactions open
# at a barrier than the pool's 4 server connections); tests/ops runs a mixed parallel load through
# PgBouncer. PGBOUNCER_TESTS=tests/api for the whole API suite that way.
PGBOUNCER_TESTS ?= tests/api/test_tenancy.py tests/api/test_unit_of_work.py \
	tests/api/test_block_lifecycle.py tests/api/test_corporate_month.py \
	tests/api/test_kiosk_day.py tests/api/test_end_of_day.py
test-pgbouncer: $(STAMP) $(CLIENTGEN_STAMP) ## the pooling-sensitive tests again, the app's database reached through PgBouncer (transaction mode)
	PMS_TEST_VIA_PGBOUNCER=1 $(BIN)/pytest -q -m postgres $(PGBOUNCER_TESTS) $(XDIST)

lint: $(STAMP)
	$(BIN)/ruff check pms workers cli tests bench

bench: $(STAMP) ## benchmarks against PostgreSQL with baselines measured in the same run
	$(BIN)/python -m bench.run

chaos: $(STAMP) ## fault tests at full length: broker outage, rolling deploys, database failovers (Patroni), broker node losses (3-node cluster), both at once
	@command -v patroni >/dev/null && command -v etcd >/dev/null || { \
	  echo "make chaos needs Patroni and etcd: apt-get install -y patroni etcd-server"; exit 2; }
	PMS_CHAOS_FULL=1 $(BIN)/pytest -q -s -m chaos --timeout=3600

fuzz: $(STAMP) ## schemathesis from the OpenAPI document at length: more examples, negative cases too
	PMS_FUZZ_EXAMPLES=$${PMS_FUZZ_EXAMPLES:-60} PMS_FUZZ_NEGATIVE=1 $(BIN)/pytest -q tests/api/test_fuzz.py

openapi: $(STAMP)
	$(BIN)/pms-cli openapi

screenshots: $(STAMP) ## the console's pages as PNGs for docs/guides/back-office-console.md (Chromium)
	$(BIN)/python -m tests.e2e.console_screenshots

clean:
	rm -rf $(VENV) $(CLIENTGEN) var .pytest_cache

# The simulated hotel at length (tests/simulation): SEED= DAYS= ROOMS= DATABASE=postgres|sqlite
simulate: $(STAMP) ## a month of a hotel through the HTTP API, every invariant after every step
	$(BIN)/python -m tests.simulation --days $(or $(DAYS),30) --rooms $(or $(ROOMS),60) \
		$(if $(SEED),--seed $(SEED),) --database $(or $(DATABASE),postgres)

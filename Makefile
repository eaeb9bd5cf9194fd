# Two commands: `make run` serves the API on the embedded default; `make test` passes the suite.
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
STAMP   = $(VENV)/.installed

.PHONY: clientgen run test test-fast test-pgbouncer lint bench chaos clean openapi fuzz

$(STAMP): setup.cfg pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

# The client generators (issue 27): openapi-python-client and datamodel-code-generator, pinned in
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

test: $(STAMP) $(CLIENTGEN_STAMP)  ## the whole suite (PostgreSQL and RabbitMQ tests skip locally if the servers are down)
	$(BIN)/pytest -q --durations=25 $(XDIST)

test-fast: $(STAMP) $(CLIENTGEN_STAMP)
	$(BIN)/pytest -q -m "not slow" $(XDIST)

test-pgbouncer: $(STAMP) $(CLIENTGEN_STAMP) ## the API tests again, the app's database reached through PgBouncer (transaction mode)
	PMS_TEST_VIA_PGBOUNCER=1 $(BIN)/pytest -q -m postgres tests/api $(XDIST)

lint: $(STAMP)
	$(BIN)/ruff check pms workers cli tests bench

bench: $(STAMP) ## benchmarks against PostgreSQL with baselines measured in the same run
	$(BIN)/python -m bench.run

chaos: $(STAMP) ## fault tests at full length (60 s broker outage, 3 rolling deploys under 90 s of load)
	PMS_CHAOS_FULL=1 $(BIN)/pytest -q -m chaos

fuzz: $(STAMP) ## schemathesis from the OpenAPI document at length: more examples, negative cases too
	PMS_FUZZ_EXAMPLES=$${PMS_FUZZ_EXAMPLES:-60} PMS_FUZZ_NEGATIVE=1 $(BIN)/pytest -q tests/api/test_fuzz.py

openapi: $(STAMP)
	$(BIN)/pms-cli openapi

clean:
	rm -rf $(VENV) $(CLIENTGEN) var .pytest_cache

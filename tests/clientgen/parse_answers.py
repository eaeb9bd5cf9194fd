"""Parse recorded answers with the generated client (run with .venv-clientgen's Python by
tests/api/test_fuzz.py): every 2xx the fuzz pass reached must parse into the generated model of
its operation (openapi-python-client's `_parse_response`, strict about unexpected statuses) and,
when the document names a component, into the pydantic model of datamodel-code-generator.

argv: generated dir, answers file (JSON lines: operation_id, status, body, schema).
Prints `parsed N`; exits non-zero listing every answer that did not parse.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import load, snake  # noqa: E402

generated, answers = sys.argv[1:3]
pkg, pyd, OPS = load(generated)
client = pkg.Client(base_url="http://unused", raise_on_unexpected_status=True)
failures, parsed = [], 0
for line in Path(answers).read_text().splitlines():
    answer = json.loads(line)
    op, status, body, schema = (answer["operation_id"], answer["status"], answer["body"],
                                answer["schema"])
    label = f"{op} {status}"
    try:
        module = OPS[snake(op)]
        content = json.dumps(body).encode() if body is not None else b""
        result = module._parse_response(client=client, response=httpx.Response(
            status, content=content, headers={"content-type": "application/json"}))
        if body is not None and schema:
            assert result is not None, "the generated client returned it untyped"
            assert type(result).__name__ == schema, (type(result).__name__, schema)
            getattr(pyd, schema).model_validate_json(content)
        parsed += 1
    except Exception as exc:  # noqa: BLE001 - collect them all
        failures.append(f"{label}: {type(exc).__name__}: {str(exc)[:400]}")
print("parsed", parsed)
if failures:
    print("\n".join(failures))
    sys.exit(1)

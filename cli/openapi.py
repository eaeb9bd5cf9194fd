"""`pms-cli openapi`: print the generated OpenAPI 3.1 document."""

from __future__ import annotations

import json

import typer


def openapi(indent: int = typer.Option(2, help="JSON indentation.")) -> None:
    """Print the OpenAPI document generated from the route table and schemas."""
    from pms.api.openapi import build_document
    from pms.routes import all_routes

    typer.echo(json.dumps(build_document(all_routes()), indent=indent or None))

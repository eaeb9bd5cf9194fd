"""Request and response shapes (msgspec), one module per resource family.

The same Struct types validate requests (unknown fields refused), document the OpenAPI
operations, and, through the `*_out(model)` serializers beside them, shape both the API response
and the CloudEvent `data`, so the three cannot drift apart.
"""

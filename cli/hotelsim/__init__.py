"""A simulated hotel driven through the HTTP API, as its staff, channels, guests and kiosks use it.

`client.Client` sends each request as one of the caller kinds (real signed tokens from the
development key set) over a transport: HTTP to a running server (`HttpTransport`, the
simulation's) or the app in process (`WsgiTransport`, the demo's); every answer is held to the
API's promise (no 5xx, a documented problem+json for every refusal). `hotel.Hotel` is the model
of one property and its operations. The demo's living month (`demo_month`) and the test suite's
simulation (tests/simulation) drive the same operations.
"""

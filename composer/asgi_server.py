"""Two defaults of Daphne, the production ASGI server, that hide errors from clients.

Daphne offers no option for either, so `configure_daphne()` (called by composer/asgi.py, which
Daphne imports before it starts listening) sets them on its classes:

- Twisted, under Daphne, parses every `multipart/form-data` POST body itself before the
  application sees it, only to throw the result away (Daphne passes the raw body on). A
  body it cannot parse (an empty multipart, a missing boundary) is answered with a bare
  400, no body, and a dropped connection: the client never learns what was wrong, and
  nothing is logged. Told not to, Twisted hands every body to the application, which
  answers in its own words (the API: 415 with the error shape).
- Autobahn, Daphne's websocket layer, answers a frame over the size limit (or text that is
  not UTF-8) by dropping the TCP connection without a close frame. RFC 6455 wants the
  close frame with its code (1009 message too big, 1007 invalid payload data) so that the
  client can tell a refusal from a network failure; `failByDrop=False` sends it.

Both are class-level, idempotent, and harmless when Daphne is not the server (uvicorn,
the tests' server, already does both right).
"""

from __future__ import annotations

from typing import Any


def configure_daphne() -> None:
    """Set Daphne's request and websocket factories as the module docstring says."""
    try:
        from daphne import http_protocol, ws_protocol  # type: ignore[import-untyped]
    except ImportError:  # not served by Daphne
        return
    request_class: Any = http_protocol.WebRequest
    if not getattr(request_class, "_composer_bodies_untouched", False):
        original_init = request_class.__init__

        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            original_init(self, *args, **kwargs)
            # twisted.web.http.Request.requestReceived parses form bodies when this is true.
            self._parsePOSTFormSubmission = False

        request_class.__init__ = __init__
        request_class._composer_bodies_untouched = True
    factory_class: Any = ws_protocol.WebSocketFactory
    if not getattr(factory_class, "_composer_close_frames", False):
        original_factory_init = factory_class.__init__

        def factory_init(self: Any, *args: Any, **kwargs: Any) -> None:
            original_factory_init(self, *args, **kwargs)
            self.setProtocolOptions(failByDrop=False)

        factory_class.__init__ = factory_init
        factory_class._composer_close_frames = True

"""Who may ask the server what (docs/serve.md, "Security").

Every request carries the per-start token (a URL query ``token=``, the ``X-Gitflow-Token``
header, or a POSTed form field ``token``) or is refused with 403; a cookie alone never counts, so
another site cannot ride on the browser's. A request that changes something (POST) is also
refused when the browser says it comes from another site (``Origin``, ``Sec-Fetch-Site``). The
``Host`` header must name the address the server listens on, so a DNS name rebound to 127.0.0.1
reads nothing. Every answer carries :data:`HEADERS`: a Content-Security-Policy without inline
script, no MIME sniffing, no framing, no referrer to another site (the URL holds the token).
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Mapping
from typing import Protocol
from urllib.parse import urlsplit

TOKEN_HEADER = "X-Gitflow-Token"

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)

HEADERS: Mapping[str, str] = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",  # no-referrer would make a form POST send "Origin: null"
    "Cache-Control": "no-store",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}


class Headers(Protocol):
    """A request's headers (``http.server``'s, or a dict in tests)."""

    def get(self, name: str, /) -> str | None: ...


def new_token() -> str:
    """A fresh secret for one start of the server (256 bits, URL-safe)."""
    return secrets.token_urlsafe(32)


def token_ok(expected: str, given: str | None) -> bool:
    """Whether ``given`` is the token (compared in constant time)."""
    return given is not None and hmac.compare_digest(expected.encode(), given.encode())


def allowed_hosts(port: int) -> frozenset[str]:
    """The ``Host`` values a request to the server may carry."""
    return frozenset({f"127.0.0.1:{port}", f"localhost:{port}"})


def host_problem(headers: Headers, port: int) -> str | None:
    """Why the ``Host`` header is refused, or None."""
    host = headers.get("Host")
    if host is None or host.lower() not in allowed_hosts(port):
        return f"Host {host!r} is not this server"
    return None


def cross_site_problem(headers: Headers, port: int) -> str | None:
    """Why a request that changes something is refused as cross-site, or None.

    A browser sends ``Origin`` with every POST and ``Sec-Fetch-Site`` with every request (the
    ones in use since 2020); both, when present, must say this server. A client that is not a
    browser sends neither and is judged by its token alone."""
    site = headers.get("Sec-Fetch-Site")
    if site is not None and site not in ("same-origin", "none"):
        return f"Sec-Fetch-Site {site!r}: the request comes from another site"
    origin = headers.get("Origin")
    if origin is not None:
        parts = urlsplit(origin)
        if parts.scheme != "http" or parts.netloc.lower() not in allowed_hosts(port):
            return f"Origin {origin!r} is not this server"
    return None

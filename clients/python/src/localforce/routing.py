"""simple-salesforce routed to localforce: a requests session that reaches localforce wherever
a Salesforce client sends it, and a logged-in simple-salesforce client (the
`localforce-client[simple-salesforce]` extra brings requests and simple-salesforce).

simple-salesforce (and harnesses built on it, such as CRMArena's) log in at
`https://login.salesforce.com` and then call `https://<instance>`. `LocalforceAdapter` sends
those requests to localforce instead, in process: no hosts file, no proxy. `install()` mounts it
on every `requests.Session` created afterwards, for code that builds its own sessions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import requests
from requests.adapters import HTTPAdapter

# The hosts Salesforce clients log in at; the instance is localforce itself after login.
LOGIN_HOSTS = ("login.salesforce.com", "test.salesforce.com")


class LocalforceAdapter(HTTPAdapter):
    """Sends each request it gets to `base_url`, keeping the path and query."""

    def __init__(self, base_url: str, ca_file: str | None = None) -> None:
        super().__init__()
        parts = urlsplit(base_url)
        self.scheme = parts.scheme
        self.netloc = parts.netloc
        self.ca_file = ca_file

    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:  # type: ignore[override]
        parts = urlsplit(request.url or "")
        request.url = urlunsplit((self.scheme, self.netloc, parts.path, parts.query, ""))
        request.headers["Host"] = self.netloc
        # Only localforce is reached through here, so its CA is the one to trust (requests lets
        # REQUESTS_CA_BUNDLE override a session's own `verify`).
        if self.ca_file is not None and kwargs.get("verify") is not False:
            kwargs["verify"] = self.ca_file
        return super().send(request, **kwargs)


def _prefixes(base_url: str) -> list[str]:
    netloc = urlsplit(base_url).netloc
    hosts = [*LOGIN_HOSTS, netloc]
    if netloc.startswith("127.0.0.1"):
        hosts.append(netloc.replace("127.0.0.1", "localhost", 1))
    return [f"{scheme}://{host}" for host in hosts for scheme in ("https", "http")]


def mount(session: requests.Session, base_url: str, ca_file: str | None = None) -> None:
    """Route the Salesforce login hosts and the instance of `session` to localforce."""
    adapter = LocalforceAdapter(base_url, ca_file)
    for prefix in _prefixes(base_url):
        session.mount(prefix, adapter)
    if ca_file is not None:
        session.verify = ca_file


def localforce_session(base_url: str, ca_file: str | None = None) -> requests.Session:
    """A requests session on which simple-salesforce reaches localforce at `base_url`."""
    session = requests.Session()
    mount(session, base_url, ca_file)
    return session


def connect(
    base_url: str,
    username: str = "agent@example.com",
    password: str = "password",
    security_token: str = "",
    ca_file: str | None = None,
    **kwargs: Any,
) -> Any:
    """A simple-salesforce client logged in to localforce by SOAP, as harnesses do."""
    from simple_salesforce.api import Salesforce

    return Salesforce(
        username=username,
        password=password,
        security_token=security_token,
        session=localforce_session(base_url, ca_file),
        **kwargs,
    )


_original_init: Callable[..., None] | None = None


def install(base_url: str, ca_file: str | None = None) -> None:
    """Mount the adapter on every requests.Session made from now on (one call, for harnesses
    that create their own sessions, like `Salesforce(username, password, security_token)`)."""
    global _original_init
    uninstall()
    original = requests.Session.__init__
    _original_init = original

    def patched(self: requests.Session, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        mount(self, base_url, ca_file)

    requests.Session.__init__ = patched  # type: ignore[method-assign]


def uninstall() -> None:
    global _original_init
    if _original_init is not None:
        requests.Session.__init__ = _original_init  # type: ignore[method-assign]
        _original_init = None

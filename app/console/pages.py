"""How console pages are answered: the templates, the route class that turns errors into
pages, and the admin key a browser carries as a cookie."""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any
from urllib.parse import quote

from fastapi import Request, Response
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.routing import APIRoute
from fastapi.templating import Jinja2Templates

from app.api.control import is_operator, same_key
from app.api.deps import app_state
from app.errors import SalesforceError

HERE = Path(__file__).parent
TEMPLATES = Jinja2Templates(directory=HERE / "templates")
# JSON as the API writes it: keys in the order it sends them (Jinja's tojson sorts them).
TEMPLATES.env.filters["api_json"] = lambda value: json.dumps(value, indent=2, ensure_ascii=False)
STATIC_DIR = HERE / "static"
COOKIE = "localforce_admin_key"
LOGIN_PATH = "/console/login"


class LoginRequired(Exception):
    """The browser did not bring the admin key."""


def render(request: Request, template: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    return TEMPLATES.TemplateResponse(request, template, context, status_code=status_code)


def cookie_for(key: str) -> str:
    """What the browser keeps instead of the key itself: a MAC of the console's name under
    it (the key never sits in a cookie jar, and any key makes a header-safe value)."""
    return hmac.new(
        key.encode("utf-8", "surrogatepass"), b"localforce console", hashlib.sha256
    ).hexdigest()


def has_admin_key(request: Request) -> bool:
    """Whether the request may use the console: it carries the key (the console's cookie, or
    a header as the control plane takes it), or the control plane is served open."""
    settings = app_state(request).settings
    cookie = request.cookies.get(COOKIE, "")
    if same_key(cookie, cookie_for(settings.admin_key)):
        return True
    return is_operator(request, settings)


async def require_admin_key(request: Request) -> None:
    if not has_admin_key(request):
        raise LoginRequired


def error_page(request: Request, error: SalesforceError) -> HTMLResponse:
    """A Salesforce error as a page: its status, and the error array as the API gives it."""
    return render(request, "error.html", status_code=error.status_code, error=error)


class ConsoleRoute(APIRoute):
    """A console route: a SalesforceError becomes a page of the same status, and a browser
    without the admin key is sent to the login page."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def handle(request: Request) -> Response:
            try:
                return await handler(request)
            except LoginRequired:
                target = quote(request.url.path + _query(request), safe="")
                return RedirectResponse(f"{LOGIN_PATH}?next={target}", status_code=303)
            except SalesforceError as error:
                return error_page(request, error)

        return handle


def _query(request: Request) -> str:
    return f"?{request.url.query}" if request.url.query else ""


def back_to(path: str, **params: str) -> RedirectResponse:
    """After a form's action: see the page again (303, so a reload does not repeat it)."""
    query = "&".join(f"{key}={quote(value, safe='')}" for key, value in params.items())
    return RedirectResponse(f"{path}?{query}" if query else path, status_code=303)

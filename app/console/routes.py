"""Everything the console serves, for create_app() to install."""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles

from app.console import browse_pages, overview_pages, sandbox_pages
from app.console.pages import STATIC_DIR

ROUTERS = (
    overview_pages.router,
    overview_pages.guarded,
    sandbox_pages.router,
    browse_pages.router,
)


def install(app: FastAPI) -> None:
    for router in ROUTERS:
        app.include_router(router)
    # htmx and the stylesheet ship with the package: nothing is fetched from the internet.
    app.mount("/console/static", StaticFiles(directory=STATIC_DIR), name="console-static")

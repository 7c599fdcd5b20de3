"""Templates and the warm pool: the data a sandbox starts from, and ready copies of it.

A template holds the org freshly generated from a seed, or, when the server's org was imported
from a dump (`localforce import`), that imported data whatever the seed: an imported org has no
seed to generate it from. It is built on first use, once for every worker (the others wait for
its row to read ready). Copies of it are kept in a warm pool, topped up by a thread of each
process, so that creating a sandbox costs a checkout, not a copy. A template no sandbox has
needed for the template idle time goes with its pooled copies (`retire_idle`, on each sweep of
the sandboxes); so does the least recently used unneeded one when a new template would pass the
bound on templates.

The templates and the pool are rows of the platform database (app.sandbox.registry), so every
worker and replica shares them; this process keeps only caches of those rows and the thread
that tops the pool up.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Engine, select

from app.sandbox.clock import utc_now
from app.sandbox.model import SandboxLimitReached, SandboxSettings
from app.sandbox.registry import (
    add_copy,
    claim_copy,
    claim_template_build,
    forget_template,
    hold_template,
    lock_templates,
    mark_template,
    pooled_copies,
    register_template,
    retire_template,
    set_url,
    template_ready,
    template_rows,
    templates_in_use,
    use_template,
)
from app.storage.backends import Copies
from app.storage.database import platform_transaction
from app.storage.platform import IMPORTED_SOURCE_PREFIX, PLATFORM_REVISION, OrgInfo

ORG_INFO = OrgInfo.__table__  # type: ignore[attr-defined]
# A template build whose worker vanished is taken over after this long.
STALE_BUILD = timedelta(minutes=15)
BUILD_POLL_SECONDS = 0.2
# A template seen ready is trusted this long without asking the platform database again.
READY_SECONDS = 5.0
LOG = logging.getLogger(__name__)
# How templates are stored, in their keys: "c" is read in place by copy-on-write sandboxes (on
# SQLite a rollback-journal file, which opens read-only and immutable).
TEMPLATE_LAYOUT = "c"


@dataclass(frozen=True)
class TemplateSpec:
    """What a template holds: `org` generated from `seed`, or, with `imported` (the sha256 of
    the dump), the data the server's own org was imported from."""

    org: str
    seed: int
    imported: str | None = None

    @property
    def key(self) -> str:
        version = PLATFORM_REVISION.partition("_")[0]
        if self.imported is not None:
            return f"{self.org}_import_{self.imported[:12]}_p{version}{TEMPLATE_LAYOUT}"
        return f"{self.org}_{self.seed}_p{version}{TEMPLATE_LAYOUT}"


class Templates:
    """The templates and their warm pool, as this process uses them: `attach` gives a new
    sandbox a copy (building the template first if need be), `refill` tops the pool up."""

    def __init__(
        self,
        *,
        platform: Engine,
        server: Engine,
        copies: Copies,
        build_template: Callable[[str, TemplateSpec], None],
        settings: SandboxSettings,
    ) -> None:
        self.platform = platform
        # The server's own database: it says whether the org was imported (`imported_dump`).
        self.server = server
        self.copies = copies
        self.build_template = build_template
        self.settings = settings
        # Guards the dictionaries and the refill thread's fields; never held across I/O, so no
        # create waits on it for a build. Lock order: a template's build lock, then this one
        # (`_template` and `_build` note a template ready while building), never the reverse.
        self._lock = threading.Lock()
        # A build lock per template: only creates of that same template wait for its build.
        self._template_locks: dict[str, threading.Lock] = {}
        # Templates seen ready lately (monotonic time), so a create need not ask again.
        self._ready: dict[str, float] = {}
        # Whether the server's org was imported, per org: (when read, the dump's sha256).
        self._imported: dict[str, tuple[float, str | None]] = {}
        self._refiller: threading.Thread | None = None
        self._refill_asked = threading.Event()
        self._refill_wanted: set[str] = set()
        self._stopping = False

    def all(self) -> list[str]:
        """The ready templates."""
        with self.platform.connect() as conn:
            return sorted(template_rows(conn))

    def register_found(self, conn: Any, now: datetime) -> None:
        """Inside the start's transaction: the templates earlier runs left in storage."""
        for url in self.copies.list_templates():
            register_template(conn, url, now)

    def claim(self, conn: Any, template: str, now: datetime) -> str | None:
        """Inside a create's transaction: note its use of `template`, seen ready lately, and
        take a pooled copy of it; None if the pool has none, or the template is no longer
        ready (expired since it was seen)."""
        if not use_template(conn, template, now):
            self._ready.pop(template, None)
            return None
        return claim_copy(conn, template)

    def retire_idle(self, conn: Any, now: datetime) -> dict[str, list[str]]:
        """Inside the sweep's transaction: take out of service the templates no sandbox has
        used for the template idle time. Returns what to `drop` once it commits."""
        deadline = now - timedelta(seconds=self.settings.template_idle_seconds)
        return self._retire_unused(conn, used_before=deadline)

    def imported_dump(self, org: str) -> str | None:
        """The sha256 of the dump the server's database holds `org` from, if it was imported
        (read at most every READY_SECONDS: an import replaces the data under a running server
        rarely, and takes effect for new sandboxes that much later)."""
        now = time.monotonic()
        known = self._imported.get(org)
        if known is not None and now - known[0] < READY_SECONDS:
            return known[1]
        with self.server.connect() as conn:
            source = conn.execute(
                select(ORG_INFO.c.source).where(ORG_INFO.c.org == org)
            ).scalar_one_or_none()
        dump = None
        if source is not None and source.startswith(IMPORTED_SOURCE_PREFIX):
            dump = str(source).removeprefix(IMPORTED_SOURCE_PREFIX)
        self._imported[org] = (now, dump)
        return dump

    def _spec(self, org: str, seed: int) -> tuple[TemplateSpec, str]:
        spec = TemplateSpec(org=org, seed=seed, imported=self.imported_dump(org))
        return spec, self.copies.template_url(spec.key)

    def _seen_ready(self, url: str) -> bool:
        with self._lock:
            return time.monotonic() - self._ready.get(url, -READY_SECONDS) < READY_SECONDS

    def known_ready(self, org: str, seed: int) -> str:
        """The template for `org` and `seed` if it was seen ready lately, else ""."""
        url = self._spec(org, seed)[1]
        return url if self._seen_ready(url) else ""

    def _template(self, org: str, seed: int) -> str:
        """The template for `org` and `seed`, built on first use. Only requests for this same
        template wait for its build (in this process on a lock, in others on its row)."""
        spec, url = self._spec(org, seed)
        if self._seen_ready(url):
            return url
        with self._lock:
            lock = self._template_locks.setdefault(url, threading.Lock())
        with lock:
            while True:
                with platform_transaction(self.platform) as conn:
                    ready = use_template(conn, url, utc_now())
                    if ready and self.copies.exists(url):
                        with self._lock:
                            self._ready[url] = time.monotonic()
                        return url
                    if ready:  # its row outlived its storage
                        forget_template(conn, url)
                    doomed = self._make_room(conn, url)
                    mine = claim_template_build(conn, url, utc_now(), STALE_BUILD)
                self.drop(doomed)
                if mine:
                    self._build(url, spec)
                    return url
                time.sleep(BUILD_POLL_SECONDS)  # another worker is building it

    def _build(self, url: str, spec: TemplateSpec) -> None:
        try:
            if self.copies.exists(url):
                self.copies.drop(url)  # left by a build that did not finish
            self.build_template(url, spec)
        except BaseException:
            with platform_transaction(self.platform) as conn:
                forget_template(conn, url)
            raise
        with platform_transaction(self.platform) as conn:
            mark_template(conn, url, utc_now(), ready=True)
        with self._lock:
            self._ready[url] = time.monotonic()

    def _make_room(self, conn: Any, url: str) -> dict[str, list[str]]:
        """Inside the claim's transaction: if a new template would pass the bound, retire the
        least recently used one no sandbox needs; refuse if every one is in use. Returns what
        to drop once the transaction commits (`drop`)."""
        known = template_rows(conn)
        if url in known or len(known) < self.settings.max_templates:
            return {}
        doomed = self._retire_unused(conn, used_before=utc_now(), at_most=1)
        if not doomed:
            raise SandboxLimitReached(
                f"The limit of {self.settings.max_templates} sandbox templates (distinct orgs "
                "and seeds) is reached and every one is in use: delete sandboxes of another seed "
                "first, or raise LOCALFORCE_MAX_TEMPLATES."
            )
        return doomed

    def _retire_unused(
        self, conn: Any, *, used_before: datetime, at_most: int | None = None
    ) -> dict[str, list[str]]:
        """Inside a platform transaction: take out of service the templates last used before
        `used_before` that no sandbox uses (at most `at_most`, least recently used first).
        Returns each with its pooled copies, to drop once the transaction commits.

        Safe against a create using one meanwhile, in any process: a create notes its use of
        the template (`use_template`) in the transaction that attaches its copy. The lock taken
        here waits for such a transaction and leaves out the template it used; one that comes
        after finds the template out of service and builds it anew."""
        candidates = lock_templates(conn, used_before)
        in_use = templates_in_use(conn)  # read after the locks: sees the creates waited for
        unused = sorted((u for u in candidates if u not in in_use), key=candidates.__getitem__)
        now = utc_now()
        doomed: dict[str, list[str]] = {}
        for url in unused[:at_most]:
            self._ready.pop(url, None)
            doomed[url] = retire_template(conn, url, now)
        return doomed

    def drop(self, doomed: dict[str, list[str]]) -> None:
        """Drop retired templates' storage and pooled copies, then forget their rows (until
        then they read as being built, so no create uses or rebuilds them under the drop)."""
        for template, pooled in doomed.items():
            for url in [*pooled, template]:
                self.copies.drop(url)
            with platform_transaction(self.platform) as conn:
                forget_template(conn, template)

    def attach(self, sandbox_id: str, org: str, seed: int) -> None:
        """Give the reserved sandbox a copy of the template of `org` and `seed`. Should the
        template expire meanwhile (idle for its idle time since it was found), it is built
        anew."""
        template = self._template(org, seed)
        while not self._attach_copy_of(sandbox_id, template):
            self._ready.pop(template, None)
            template = self._template(org, seed)
        self.refill(template)

    def _attach_copy_of(self, sandbox_id: str, template: str) -> bool:
        """Attach a pooled copy of `template` (claimed in the same transaction), else one
        cloned now, noting the use of the template as it is attached. False if the template is
        no longer ready: nothing is attached then."""
        with platform_transaction(self.platform) as conn:
            if not use_template(conn, template, utc_now()):
                return False
            pooled = claim_copy(conn, template)
            if pooled is not None:
                set_url(conn, sandbox_id, pooled, template)
                return True
        try:
            clone = self.copies.clone(template)
        except Exception:
            if self._still_ready(template):
                raise
            return False  # dropped under the clone
        with platform_transaction(self.platform) as conn:
            if use_template(conn, template, utc_now()):
                set_url(conn, sandbox_id, clone, template)
                return True
        self.copies.drop(clone)
        return False

    def _still_ready(self, template: str) -> bool:
        with self.platform.connect() as conn:
            return template_ready(conn, template) is True

    def refill(self, template: str) -> None:
        """Ask the pool's thread (started on first need) to top up `template`'s ready copies."""
        if self.settings.pool_size <= 0:
            return
        with self._lock:
            self._refill_wanted.add(template)
            if self._refiller is None:
                self._refiller = threading.Thread(
                    target=self._refill_forever, name="sandbox-pool", daemon=True
                )
                self._refiller.start()
        self._refill_asked.set()

    def _refill_forever(self) -> None:
        while not self._stopping:
            self._refill_asked.wait()
            self._refill_asked.clear()
            with self._lock:
                wanted, self._refill_wanted = self._refill_wanted, set()
            for template in wanted:
                try:
                    self._fill(template)
                except Exception:  # e.g. its template dropped meanwhile: the next create asks again
                    LOG.exception("Topping up the sandbox pool of %s failed", template)

    def _fill(self, template: str) -> None:
        """Clone `template` until its pool is full. The pool never counts as a use: an idle
        template expires with its pooled copies."""
        while not self._stopping:
            with self.platform.connect() as conn:
                if len(pooled_copies(conn, template)) >= self.settings.pool_size:
                    return
                if template_ready(conn, template) is not True:
                    return
            try:
                clone = self.copies.clone(template)
            except Exception:
                if self._still_ready(template):
                    raise
                return  # expired under the clone
            with platform_transaction(self.platform) as conn:
                kept = hold_template(conn, template)  # not expired since
                if kept:
                    add_copy(conn, clone, template, utc_now())
            if not kept:
                self.copies.drop(clone)
                return

    def stop(self) -> None:
        """Stop topping up the pool: the thread ends after the copy it is making."""
        self._stopping = True
        self._refill_asked.set()
        with self._lock:
            refiller = self._refiller
        if refiller is not None:
            refiller.join()

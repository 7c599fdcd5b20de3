"""Many clients writing into one sandbox at once, over a real server, on both back ends.

64 writers create, update, upsert, delete and send sObject Collections for a bounded time:
nothing answers 5xx, every acknowledged write is in the data, and the ids handed out are unique
and consecutive. Beside them, a control loop snapshots, restores and resets the same sandbox:
still no 5xx, and a last reset brings back exactly the seeded fingerprint.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import httpx
import pytest

from app.api.state import AppState
from app.seeding.pipeline import stored_content_hash
from app.storage.ids import record_number
from app.storage.records import ID_SEQUENCE
from tests.conftest import ADMIN_HEADERS, API
from tests.databases import DatabaseFactory
from tests.servers import private_org_app, serve_in_thread

WRITERS = 64
SECONDS = 4.0
MIN_ROUNDS = 2
CONTROL = "/__localforce/sandboxes"


@pytest.fixture(scope="module")
def server(
    database_factory: DatabaseFactory, sandbox_ready_template: str
) -> Iterator[tuple[str, AppState]]:
    app = private_org_app(database_factory, sandbox_ready_template, sandbox_pool_size=1)
    with serve_in_thread(app) as port:
        yield f"http://127.0.0.1:{port}", app.state.localforce


@dataclass
class Tally:
    """What the writers were told: every status, and the writes acknowledged."""

    statuses: Counter[int] = field(default_factory=Counter)
    server_errors: list[str] = field(default_factory=list)
    # id -> LastName most recently acknowledged for it
    contacts: dict[str, str] = field(default_factory=dict)
    deleted: set[str] = field(default_factory=set)
    upserted: dict[str, set[str]] = field(default_factory=dict)

    def saw(self, response: httpx.Response) -> httpx.Response:
        self.statuses[response.status_code] += 1
        if response.status_code >= 500:
            self.server_errors.append(
                f"{response.request.method} {response.request.url.path}: "
                f"{response.status_code} {response.text[:300]}"
            )
        return response


async def writer(
    sf: httpx.AsyncClient, index: int, keep_going: Callable[[], bool], tally: Tally
) -> None:
    rng = random.Random(index)
    mine: list[str] = []
    step = 0
    while keep_going():
        step += 1
        action = rng.choice(["create", "create", "update", "collection", "upsert", "delete"])
        if action == "create" or not mine:
            name = f"Zpar{index}-{step}"
            response = tally.saw(await sf.post(f"{API}/sobjects/Contact", json={"LastName": name}))
            if response.status_code == 201:
                mine.append(response.json()["id"])
                tally.contacts[response.json()["id"]] = name
        elif action == "update":
            target = rng.choice(mine)
            name = f"Zpar{index}-{step}-u"
            response = tally.saw(
                await sf.patch(f"{API}/sobjects/Contact/{target}", json={"LastName": name})
            )
            if response.status_code == 204:
                tally.contacts[target] = name
        elif action == "collection":
            names = [f"Zpar{index}-{step}-c{n}" for n in range(2)]
            body = {
                "allOrNone": False,
                "records": [{"attributes": {"type": "Contact"}, "LastName": n} for n in names],
            }
            response = tally.saw(await sf.post(f"{API}/composite/sobjects", json=body))
            if response.status_code == 200:
                for name, result in zip(names, response.json(), strict=True):
                    if result["success"]:
                        mine.append(result["id"])
                        tally.contacts[result["id"]] = name
        elif action == "upsert":
            key = f"PAR-{rng.randrange(8)}"
            response = tally.saw(
                await sf.patch(
                    f"{API}/sobjects/Product2/External_ID__c/{key}", json={"Name": f"Up {key}"}
                )
            )
            if response.status_code in (200, 201):
                tally.upserted.setdefault(key, set()).add(response.json()["id"])
        else:
            target = mine.pop(rng.randrange(len(mine)))
            response = tally.saw(await sf.delete(f"{API}/sobjects/Contact/{target}"))
            if response.status_code == 204:
                tally.deleted.add(target)
                tally.contacts.pop(target, None)


async def control_loop(
    control: httpx.AsyncClient, sandbox: str, deadline: float, tally: Tally
) -> int:
    rounds = 0
    # At least MIN_ROUNDS, however slow the machine: the writers run until this ends.
    while time.monotonic() < deadline or rounds < MIN_ROUNDS:
        rounds += 1
        tally.saw(await control.post(f"{CONTROL}/{sandbox}/snapshots", json={"name": "mid"}))
        tally.saw(await control.post(f"{CONTROL}/{sandbox}/snapshots/mid/restore"))
        tally.saw(await control.post(f"{CONTROL}/{sandbox}/reset"))
        tally.saw(await control.get(f"{CONTROL}/{sandbox}/diff"))
    return rounds


def new_sandbox(base: str, sandbox_id: str) -> str:
    response = httpx.post(
        f"{base}{CONTROL}", headers=ADMIN_HEADERS, json={"id": sandbox_id}, timeout=120
    )
    assert response.status_code == 201, response.text
    return str(response.json()["access_token"])


def clients(base: str, token: str) -> tuple[httpx.AsyncClient, httpx.AsyncClient]:
    limits = httpx.Limits(max_connections=WRITERS + 4, max_keepalive_connections=WRITERS + 4)
    sf = httpx.AsyncClient(
        base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=120, limits=limits
    )
    return sf, httpx.AsyncClient(base_url=base, headers=ADMIN_HEADERS, timeout=120)


def all_contacts(base: str, token: str) -> dict[str, str]:
    """Every live Contact of the sandbox with a Zpar name, paging through the locators."""
    found: dict[str, str] = {}
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=base, headers=headers, timeout=120) as sf:
        page = sf.get(
            f"{API}/query",
            params={"q": "SELECT Id, LastName FROM Contact WHERE LastName LIKE 'Zpar%'"},
        ).json()
        while True:
            found.update({r["Id"]: r["LastName"] for r in page["records"]})
            if page["done"]:
                return found
            page = sf.get(page["nextRecordsUrl"]).json()


@pytest.mark.asyncio
async def test_parallel_writers_into_one_sandbox(server: tuple[str, AppState]) -> None:
    base, state = server
    token = new_sandbox(base, "writers")
    sandbox = state.sandboxes.get("writers")
    with sandbox.engine.connect() as conn:
        seeded_last = dict(conn.execute(ID_SEQUENCE.select()).all())
    tally = Tally()
    sf, control = clients(base, token)
    async with sf, control:
        deadline = time.monotonic() + SECONDS
        running = lambda: time.monotonic() < deadline  # noqa: E731
        await asyncio.gather(*(writer(sf, i, running, tally) for i in range(WRITERS)))

    assert tally.server_errors == []
    assert set(tally.statuses) <= {200, 201, 204}, tally.statuses
    assert len(tally.contacts) > WRITERS  # the run did real work
    stored = all_contacts(base, token)
    assert stored == tally.contacts  # every acknowledged write, as last acknowledged
    for key, ids in tally.upserted.items():
        assert len(ids) == 1, (key, ids)  # parallel upserts of one key made one record

    created = [*tally.contacts, *tally.deleted]
    assert len(set(created)) == len(created)
    numbers = sorted(record_number(i) for i in created)
    first = seeded_last.get("Contact", 0) + 1
    assert numbers == list(range(first, first + len(numbers)))  # consecutive, none skipped


@pytest.mark.asyncio
async def test_reset_snapshot_and_restore_beside_writers(server: tuple[str, AppState]) -> None:
    base, state = server
    token = new_sandbox(base, "churn")
    sandbox = state.sandboxes.get("churn")
    registry, tables = sandbox.schema.registry, sandbox.schema.tables
    with sandbox.engine.connect() as conn:
        seeded = stored_content_hash(conn, registry, tables)
    tally = Tally()
    sf, control = clients(base, token)
    async with sf, control:
        deadline = time.monotonic() + SECONDS
        churn = asyncio.create_task(control_loop(control, "churn", deadline, tally))
        churning = lambda: not churn.done()  # noqa: E731
        await asyncio.gather(*(writer(sf, i, churning, tally) for i in range(WRITERS)))
        rounds = await churn
        final = await control.post(f"{CONTROL}/churn/reset")
    assert tally.server_errors == []
    assert rounds >= MIN_ROUNDS
    # A writer's record may be reset away under it: 404 (or 400 ENTITY_IS_DELETED) is a fair
    # answer then, a 5xx never is.
    assert set(tally.statuses) <= {200, 201, 204, 400, 404}, tally.statuses
    assert final.status_code == 200, final.text
    with sandbox.engine.connect() as conn:
        assert stored_content_hash(conn, registry, tables) == seeded
    response = httpx.get(f"{base}{CONTROL}/churn/diff", headers=ADMIN_HEADERS)
    assert response.json() == {"created": [], "updated": [], "deleted": []}

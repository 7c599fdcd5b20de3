"""Logins and sessions: who a bearer token belongs to.

By default any username and password log in to the default org (a local org should just
work). With LOCALFORCE_USERNAME and LOCALFORCE_PASSWORD set, only that pair does; with
LOCALFORCE_SECURITY_TOKEN set too, the password must carry that token appended, as Salesforce
asks of logins from outside trusted networks. A login into a sandbox (`me@x.com.<its id>`)
needs that sandbox's own password, in either mode: the configured pair reaches the default org
only.
"""

from __future__ import annotations

import hashlib
import secrets
import string
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import Connection, Engine, bindparam, delete, insert, select, update

from app.errors import SalesforceError
from app.sandbox.lifecycle import Sandboxes
from app.sandbox.model import DEFAULT_ID
from app.storage.database import platform_transaction
from app.storage.driver_reads import read_all
from app.storage.ids import ORGANIZATION_ID, make_id
from app.storage.platform import AuthSession
from app.storage.tables import TableSet
from app.storage.text import keys_equal

ORG_ID = ORGANIZATION_ID
_TOKEN_ALPHABET = string.ascii_letters + string.digits
SESSIONS = AuthSession.__table__  # type: ignore[attr-defined]


class LoginFailed(SalesforceError):
    error_code = "INVALID_LOGIN"
    status_code = 400

    def __init__(self) -> None:
        super().__init__("Invalid username, password, security token; or user locked out.")


@dataclass(frozen=True)
class Session:
    token: str
    username: str
    user_id: str
    sandbox_id: str = "default"


@dataclass(frozen=True)
class Credentials:
    """The configured login, or None for "anyone may log in"."""

    username: str
    password: str
    security_token: str = ""

    @property
    def fingerprint(self) -> str:
        """What sessions issued under these credentials remember: a change ends them."""
        secret = "\0".join((self.username.lower(), self.password, self.security_token))
        return hashlib.sha256(secret.encode()).hexdigest()

    def accept(self, username: str, password: str) -> bool:
        # Compared in constant time: how long a refusal takes tells nothing of the secret.
        expected = (self.password + self.security_token).encode()
        return username.lower() == self.username.lower() and secrets.compare_digest(
            password.encode(), expected
        )


def fingerprint_of(credentials: Credentials | None) -> str:
    return "" if credentials is None else credentials.fingerprint


def token_hash(token: str) -> str:
    """What the session table keeps of a token: its SHA-256, never the token."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def new_sandbox_password() -> str:
    """A sandbox's password: 144 random bits, shown once at its creation (kept as its
    `token_hash`)."""
    return secrets.token_urlsafe(18)


def password_matches(password: str, password_hash: str) -> bool:
    """Whether `password` is the one `password_hash` was made from; an empty hash matches
    nothing. Hashes are compared in constant time."""
    return bool(password_hash) and secrets.compare_digest(token_hash(password), password_hash)


def new_token() -> str:
    """A token shaped like Salesforce's: `<org id 15>!<opaque letters and digits>`."""
    opaque = "".join(secrets.choice(_TOKEN_ALPHABET) for _ in range(96))
    return f"{ORG_ID[:15]}!AQ{opaque}"


def login_user(conn: Connection, tables: TableSet, username: str) -> tuple[str, str]:
    """The User a login acts as: the one with that Username, else the org's first user."""
    users = tables["User"]
    row = conn.execute(
        select(users.c.Id, users.c.Username).where(
            keys_equal(users.c.Username, username, indexed=True), users.c.IsDeleted.is_(False)
        )
    ).first()
    if row is None:
        row = conn.execute(
            select(users.c.Id, users.c.Username)
            .where(users.c.IsDeleted.is_(False))
            .order_by(users.c.Id)
            .limit(1)
        ).first()
    if row is None:
        return make_id("005", 0), username
    return str(row[0]), username or str(row[1])


def issue_session(
    conn: Connection,
    *,
    username: str,
    user_id: str,
    sandbox_id: str,
    now: datetime,
    credentials: str = "",
) -> Session:
    """A new token for `user_id` in `sandbox_id`, kept (hashed) in the server's session table;
    `credentials` is the fingerprint of the strict login in force ("" in open mode)."""
    session = Session(token=new_token(), username=username, user_id=user_id, sandbox_id=sandbox_id)
    conn.execute(
        insert(SESSIONS).values(
            token=token_hash(session.token),
            username=session.username,
            user_id=user_id,
            created_at=now,
            last_used=now,
            sandbox_id=sandbox_id,
            credentials=credentials,
        )
    )
    return session


def login(
    session_conn: Connection,
    user_conn: Connection,
    tables: TableSet,
    *,
    username: str,
    password: str,
    credentials: Credentials | None,
    now: datetime,
    sandbox_id: str,
    sandbox_password_hash: str | None = None,
) -> Session:
    """Check the password and open a session as the matching User of the sandbox's org: a
    sandbox's own (`sandbox_password_hash` given), else the default org's login rules."""
    if sandbox_password_hash is not None:
        accepted = password_matches(password, sandbox_password_hash)
    else:
        accepted = credentials is None or credentials.accept(username, password)
    if not accepted:
        raise LoginFailed()
    user_id, username = login_user(user_conn, tables, username)
    return issue_session(
        session_conn,
        username=username,
        user_id=user_id,
        sandbox_id=sandbox_id,
        now=now,
        credentials=fingerprint_of(credentials),
    )


@dataclass(frozen=True)
class StoredSession:
    session: Session
    last_used: datetime | None
    credentials: str


# Built once and read on the driver's cursor: a request resolves its token with it.
_FIND_SESSION = select(
    SESSIONS.c.username,
    SESSIONS.c.user_id,
    SESSIONS.c.sandbox_id,
    SESSIONS.c.last_used,
    SESSIONS.c.credentials,
).where(SESSIONS.c.token == bindparam("token_hash"))


def find_session(conn: Connection, token: str) -> StoredSession | None:
    found = read_all(conn, _FIND_SESSION, {"token_hash": token_hash(token)})
    if not found:
        return None
    row = found[0]
    session = Session(token=token, username=row[0], user_id=row[1], sandbox_id=row[2])
    return StoredSession(session=session, last_used=row[3], credentials=row[4])


@dataclass(frozen=True)
class SessionPolicy:
    """When a stored session still stands: unused for less than the idle time, and issued
    under the strict login in force now."""

    idle: timedelta
    credentials: str

    @property
    def touch_every(self) -> timedelta:
        # Last use is written back this often at most: a write per token per minute, not
        # per request, at the cost of expiring up to this much late.
        return min(timedelta(minutes=1), self.idle / 10)

    def stands(self, stored: StoredSession, now: datetime) -> bool:
        last_used = stored.last_used or now
        return stored.credentials == self.credentials and now - last_used < self.idle

    def needs_touch(self, stored: StoredSession, now: datetime) -> bool:
        return stored.last_used is None or now - stored.last_used >= self.touch_every


def touch_session(conn: Connection, token: str, now: datetime) -> None:
    conn.execute(
        update(SESSIONS).where(SESSIONS.c.token == token_hash(token)).values(last_used=now)
    )


def split_sandbox(username: str, is_sandbox: Callable[[str], bool]) -> tuple[str, str | None]:
    """`user@example.com.ep7` -> (`user@example.com`, `ep7`) when a sandbox `ep7` exists: the
    suffix Salesforce gives sandbox usernames picks the sandbox."""
    base, dot, suffix = username.rpartition(".")
    if dot and base and suffix and is_sandbox(suffix):
        return base, suffix
    return username, None


def revoke_sandbox_sessions(conn: Connection, sandbox_id: str) -> None:
    """End every session of a sandbox (its episode has ended)."""
    conn.execute(delete(SESSIONS).where(SESSIONS.c.sandbox_id == sandbox_id))


def revoke_session(conn: Connection, token: str) -> bool:
    """End the session; whether there was one."""
    result = conn.execute(delete(SESSIONS).where(SESSIONS.c.token == token_hash(token)))
    return bool(result.rowcount)


# The sessions' own transactions: each function below writes in one short transaction of its
# own on the platform database, within its caller's thread-pool call, and commits it (the
# functions above take a connection and never commit).


def sandbox_login(
    sandboxes: Sandboxes,
    platform: Engine,
    *,
    username: str,
    password: str,
    credentials: Credentials | None,
    clock: Callable[[], datetime],
    closed: Callable[[Connection, str], bool],
) -> Session:
    """Log in to the sandbox the username's suffix names (`me@x.com.ep7`) with its own
    password, else to the default org by its rules; refused when `closed` says the sandbox's
    state is final (an answered episode's, which the caller knows of)."""
    base, sandbox_id = split_sandbox(username, lambda name: sandboxes.find(name) is not None)
    sandbox = sandboxes.get(sandbox_id or DEFAULT_ID)
    with sandbox.engine.connect() as user_conn, platform_transaction(platform) as conn:
        if closed(conn, sandbox.id):
            raise LoginFailed()
        return login(
            conn,
            user_conn,
            sandbox.schema.tables,
            username=base,
            password=password,
            credentials=credentials,
            now=clock(),
            sandbox_id=sandbox.id,
            # A suffix names a sandbox, never grants it: its password does.
            sandbox_password_hash=None if sandbox.is_default else sandbox.password_hash,
        )


def start_session(
    platform: Engine,
    *,
    username: str,
    user_id: str,
    sandbox_id: str,
    now: datetime,
    credentials: str = "",
) -> Session:
    """A new session (see issue_session), kept at once."""
    with platform_transaction(platform) as conn:
        return issue_session(
            conn,
            username=username,
            user_id=user_id,
            sandbox_id=sandbox_id,
            now=now,
            credentials=credentials,
        )


def mark_used(platform: Engine, token: str, now: datetime) -> None:
    """Write back when the token's session was last used."""
    with platform_transaction(platform) as conn:
        touch_session(conn, token, now)


def end_sessions(platform: Engine, tokens: Iterable[str]) -> list[str]:
    """End the sessions the tokens name, together; the tokens that named one."""
    with platform_transaction(platform) as conn:
        return [token for token in tokens if revoke_session(conn, token)]

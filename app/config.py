"""Settings, read from the environment with the LOCALFORCE_ prefix."""

from __future__ import annotations

from datetime import datetime
from functools import lru_cache
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

REPO_ROOT = Path(__file__).resolve().parent.parent


class Settings(BaseSettings):
    """Everything an operator can set. Built once in the lifespan; tests build their own."""

    model_config = SettingsConfigDict(env_prefix="LOCALFORCE_", extra="ignore")

    host: str = "127.0.0.1"
    port: int = 8000
    data_dir: Path = Path("data")
    # Empty means the embedded default: a SQLite file in data_dir.
    database_url: str = ""
    org: str = "original"
    seed: int = 42
    # Both set: login is strict. Either empty: any username and password log in.
    username: str = ""
    password: str = ""
    # With strict login: the security token the password must carry appended (empty: none).
    security_token: str = ""
    # A session unused for this long ends (Salesforce's default timeout: two hours).
    session_idle_seconds: int = Field(default=7200, ge=1)
    seed_dir: Path = REPO_ROOT / "seed"
    # The org's time zone (IANA name): date literals such as TODAY resolve in it.
    timezone: str = "UTC"
    # Pin the org clock (e.g. 2024-06-01T09:00:00Z) so every run resolves dates the same way.
    clock: datetime | None = None
    fiscal_year_start_month: int = Field(default=1, ge=1, le=12)
    # Sandboxes: how many may live at once, after how long unused they expire, how many ready
    # copies to keep warm.
    max_sandboxes: int = Field(default=1000, ge=1)
    sandbox_idle_seconds: float = Field(default=3600, gt=0)
    sandbox_pool_size: int = Field(default=2, ge=0)
    # Sandboxes per worker whose database connections stay open between requests: past this
    # many, the least recently served one's connections close (reopened on its next request).
    # Below the number of agents served at once, every request would reopen its connection.
    pooled_sandboxes: int = Field(default=256, ge=1)
    # Templates (one per org and seed a sandbox asks for): at most this many; one that no
    # sandbox has used for the idle time is dropped.
    max_templates: int = Field(default=8, ge=1)
    template_idle_seconds: float = Field(default=3600, gt=0)
    # Call log entries kept per sandbox; past it the oldest go first.
    call_log_retention: int = Field(default=10_000, ge=1)
    # Open query locators per user per sandbox (opening one more releases the oldest), and
    # how long an unused one lives: Salesforce's 10 and 15 minutes.
    max_cursors_per_user: int = Field(default=10, ge=1)
    cursor_idle_seconds: float = Field(default=900, gt=0)
    # A connection must send a request's headers within this long of opening (or of starting
    # the request), and its body with no gap longer than the body timeout; else it is closed.
    header_timeout_seconds: float = Field(default=10, gt=0)
    body_timeout_seconds: float = Field(default=30, gt=0)
    # The largest request body read (Salesforce: 50 MB of text in a non-multipart message).
    max_body_bytes: int = Field(default=50 * 1024 * 1024, ge=1)
    # glibc malloc arenas the server process may use (0: glibc's own limit, 8 per core).
    malloc_arenas: int = Field(default=2, ge=0)
    # Allocations this big and bigger come from mmap (0: glibc's sliding threshold).
    malloc_mmap_threshold: int = Field(default=128 * 1024, ge=0, le=32 * 1024 * 1024)
    # How often freed heap memory is handed back to the system (0: never).
    malloc_trim_seconds: float = Field(default=10.0, ge=0)
    # Threads that run requests' routes, per worker process (anyio's default is 40): they share
    # one interpreter lock, and past a few they fight for it more than they work.
    request_threads: int = Field(default=4, ge=1)
    # Allocations between two collections of Python's youngest garbage generation (0: Python's
    # own 700); see tuning.space_out_garbage_collection.
    gc_threshold: int = Field(default=50_000, ge=0)
    # How often every generation of garbage is collected (0: at Python's own pace); see
    # tuning.collect_garbage_forever.
    gc_collect_seconds: float = Field(default=10.0, ge=0)
    # The key the /__localforce control plane and the console ask for (empty: the one kept in
    # data_dir/admin-key, made at first start; see app.admin_key).
    admin_key: str = ""
    # Serve the control plane and the console without a key: on a loopback address only.
    insecure_control_plane: bool = False
    # Run Bulk jobs in this process (off: only other workers or servers run them).
    bulk_runner: bool = True
    # A Bulk job whose runner has not said it still runs it for this long is taken up again.
    bulk_stale_seconds: float = Field(default=30.0, gt=0)
    # How often an idle job runner looks for jobs another worker queued.
    bulk_poll_seconds: float = Field(default=1.0, gt=0)
    # OpenEnv episodes served at once at /openenv (one WebSocket session each).
    openenv_max_sessions: int = Field(default=256, ge=1)
    # A task file (`localforce tasks generate`): episodes may name one of its tasks by idx.
    task_file: Path | None = None
    # An LLM judge of refusals (privacy_rejection), as CRMArena grades them: the base URL of an
    # OpenAI-compatible API, the model and the key. Empty URL: refusals are judged by rules.
    judge_url: str = ""
    judge_model: str = "gpt-4o"
    judge_api_key: str = ""

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"unknown time zone: {value}") from None
        return value

    @property
    def effective_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite:///{(self.data_dir / 'localforce.db').resolve()}"

    def as_environment(self) -> dict[str, str]:
        """These settings as LOCALFORCE_* variables (what a worker process reads back)."""
        values = self.model_dump(mode="json", exclude_none=True)
        return {f"LOCALFORCE_{name.upper()}": str(value) for name, value in values.items()}

    @property
    def platform_database_url(self) -> str:
        """Where the platform state lives (sessions, the sandbox registry, call logs, cursors):
        on PostgreSQL the server's database; on SQLite a file of its own beside the server's
        (`localforce.db` -> `localforce-platform.db`), so that these small writes never wait
        for the default sandbox's write lock."""
        url = self.effective_database_url
        if not url.startswith("sqlite"):
            return url
        path = Path(url.removeprefix("sqlite:///"))
        return f"sqlite:///{path.with_name(path.stem + '-platform.db')}"

    @property
    def strict_login(self) -> bool:
        return bool(self.username and self.password)


@lru_cache
def get_settings() -> Settings:
    return Settings()

"""Settings, read from the environment with the LOCALFORCE_ prefix."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

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
    seed_dir: Path = REPO_ROOT / "seed"

    @property
    def effective_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite:///{(self.data_dir / 'localforce.db').resolve()}"

    @property
    def strict_login(self) -> bool:
        return bool(self.username and self.password)


@lru_cache
def get_settings() -> Settings:
    return Settings()

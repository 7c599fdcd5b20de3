"""The platform tables' definitions and their migrations agree."""

from __future__ import annotations

from alembic.config import Config
from alembic.script import ScriptDirectory

from app.config import REPO_ROOT
from app.storage.platform import PLATFORM_REVISION


def test_platform_revision_is_the_alembic_head() -> None:
    config = Config(str(REPO_ROOT / "alembic.ini"))
    config.set_main_option("script_location", str(REPO_ROOT / "migrations"))
    assert ScriptDirectory.from_config(config).get_heads() == [PLATFORM_REVISION]

"""https with the generated local CA: simple-salesforce against https://localhost:PORT, with
no URL rewriting, trusting only the CA localforce made."""

from __future__ import annotations

import ssl
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import uvicorn
from simple_salesforce.api import Salesforce
from typer.testing import CliRunner

from app.cli import cli
from app.clients import connect
from app.main import create_app
from app.tls import ensure_certificates
from tests.clients.test_simple_salesforce import free_port
from tests.conftest import make_settings
from tests.databases import DatabaseFactory


@pytest.fixture(scope="module")
def tls_server(
    database_factory: DatabaseFactory,
    seeded_template: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[str, str]]:
    """(base URL, CA file) of a localforce server serving https."""
    data_dir = tmp_path_factory.mktemp("tls")
    files, created = ensure_certificates(data_dir)
    assert created
    assert ensure_certificates(data_dir) == (files, False)
    url = database_factory.new_url(template=seeded_template)
    port = free_port()
    app = create_app(make_settings(url, database_factory.workdir))
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=port,
        log_level="warning",
        ssl_certfile=str(files.cert_file),
        ssl_keyfile=str(files.key_file),
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline, "server did not start"
        time.sleep(0.05)
    yield f"https://localhost:{port}", str(files.ca_file)
    server.should_exit = True
    thread.join(timeout=10)


def test_simple_salesforce_over_https(
    tls_server: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    base_url, ca_file = tls_server
    # requests lets these override a session's `verify`; the machine may set them.
    monkeypatch.delenv("REQUESTS_CA_BUNDLE", raising=False)
    monkeypatch.delenv("CURL_CA_BUNDLE", raising=False)
    session = requests.Session()
    session.verify = ca_file
    token = session.post(
        f"{base_url}/services/oauth2/token",
        data={"grant_type": "password", "username": "agent@example.com", "password": "x"},
    ).json()["access_token"]
    sf: Any = Salesforce(instance_url=base_url, session_id=token, session=session)
    assert sf.base_url.startswith(f"{base_url}/services/data/")
    assert sf.query("SELECT COUNT() FROM Case")["totalSize"] == 977
    created = sf.Account.create({"Name": "TLS Co"})
    assert created["success"] is True
    assert sf.Account.get(created["id"])["Name"] == "TLS Co"


def test_the_ca_is_required(tls_server: tuple[str, str]) -> None:
    base_url, _ = tls_server
    with pytest.raises(requests.exceptions.SSLError):
        requests.get(f"{base_url}/services/data/", timeout=10, verify=True)
    context = ssl.create_default_context(cafile=tls_server[1])
    assert context.cert_store_stats()["x509_ca"] == 1


def test_connect_logs_in_by_soap_over_https(tls_server: tuple[str, str]) -> None:
    base_url, ca_file = tls_server
    sf: Any = connect(base_url, security_token="tok", ca_file=ca_file)
    assert sf.sf_instance == base_url.removeprefix("https://")
    assert sf.query("SELECT Id FROM Issue__c")["totalSize"] == 10


def test_env_command_prints_client_variables(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli, ["env", "--tls", "--port", "8443", "--data-dir", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert "export SF_INSTANCE_URL=https://localhost:8443" in lines
    assert "export SALESFORCE_USERNAME=agent@example.com" in lines
    ca = (tmp_path / "tls" / "ca.pem").resolve()
    for name in ("REQUESTS_CA_BUNDLE", "SSL_CERT_FILE", "NODE_EXTRA_CA_CERTS"):
        assert f"export {name}={ca}" in lines

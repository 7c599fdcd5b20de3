"""https with the generated local CA: simple-salesforce against https://localhost:PORT, with
no URL rewriting, trusting only the CA localforce made."""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from localforce.routing import connect
from simple_salesforce.api import Salesforce
from typer.testing import CliRunner

from app.cli import cli
from app.tls import ensure_certificates
from tests.databases import DatabaseFactory
from tests.servers import private_org_app, serve_in_thread


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
    app = private_org_app(database_factory, seeded_template)
    tls = {"ssl_certfile": str(files.cert_file), "ssl_keyfile": str(files.key_file)}
    with serve_in_thread(app, **tls) as port:
        yield f"https://localhost:{port}", str(files.ca_file)


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

"""A local certificate authority and a server certificate for https on this machine.

Made once with trustme and kept in the data directory, so clients trust the same CA across
restarts: point REQUESTS_CA_BUNDLE, NODE_EXTRA_CA_CERTS or SSL_CERT_FILE at `ca.pem`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

SERVER_NAMES = ("localhost", "127.0.0.1", "::1")


@dataclass(frozen=True)
class TlsFiles:
    ca_file: Path
    cert_file: Path
    key_file: Path

    def trust_instructions(self) -> list[str]:
        ca = self.ca_file.resolve()
        return [
            f"export REQUESTS_CA_BUNDLE={ca}  # Python requests, simple-salesforce",
            f"export SSL_CERT_FILE={ca}  # httpx, aiosalesforce, OpenSSL-based tools",
            f"export NODE_EXTRA_CA_CERTS={ca}  # Node.js: jsforce, the sf CLI",
        ]


def tls_files(data_dir: Path) -> TlsFiles:
    folder = data_dir / "tls"
    return TlsFiles(
        ca_file=folder / "ca.pem", cert_file=folder / "server.pem", key_file=folder / "server.key"
    )


def ensure_certificates(data_dir: Path) -> tuple[TlsFiles, bool]:
    """The CA and server certificate, created on first use; (files, whether just created)."""
    files = tls_files(data_dir)
    if all(path.exists() for path in (files.ca_file, files.cert_file, files.key_file)):
        files.key_file.chmod(0o600)  # whatever mode an earlier version left it with
        return files, False
    import trustme  # only needed the first time

    files.ca_file.parent.mkdir(parents=True, exist_ok=True)
    ca = trustme.CA(organization_name="localforce local CA")
    server = ca.issue_cert(*SERVER_NAMES)
    ca.cert_pem.write_to_path(str(files.ca_file))
    files.cert_file.write_bytes(b"".join(pem.bytes() for pem in server.cert_chain_pems))
    files.key_file.touch(mode=0o600)
    files.key_file.chmod(0o600)  # touch keeps the mode of a file that already exists
    server.private_key_pem.write_to_path(str(files.key_file))
    return files, True

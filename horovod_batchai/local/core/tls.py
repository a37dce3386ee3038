"""The loopback certificate.

The local service speaks HTTPS so that Microsoft's clients run exactly as they do against Azure:
azure-core refuses to send bearer tokens over plain http, and we would rather trust one
self-signed certificate (kept in the state directory, valid for localhost/127.0.0.1/::1 only)
than switch off that protection. Clients trust it through ``connection_verify=<cert path>``.
"""
from __future__ import annotations

import datetime
import ipaddress
import os
from pathlib import Path

__all__ = ["ensure_certificate"]

CERT_FILE = "tls-cert.pem"
KEY_FILE = "tls-key.pem"


def ensure_certificate(state_dir: Path) -> tuple[Path, Path]:
    """Return (certificate, private key) paths, creating a new pair on first use."""
    cert_path, key_path = Path(state_dir) / CERT_FILE, Path(state_dir) / KEY_FILE
    if cert_path.exists() and key_path.exists():
        return cert_path, key_path

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "horovod-batchai local service")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name).issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=3650))
        .add_extension(x509.SubjectAlternativeName([
            x509.DNSName("localhost"),
            x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
            x509.IPAddress(ipaddress.ip_address("::1")),
        ]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    Path(state_dir).mkdir(parents=True, exist_ok=True)
    # Write the key first, private from the first byte; a reader never sees a cert without its key.
    fd = os.open(str(key_path), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                   serialization.NoEncryption()))
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return cert_path, key_path

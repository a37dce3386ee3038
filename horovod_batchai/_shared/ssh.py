"""SSH keys for the cluster's admin user, like ``az ... --generate-ssh-keys``: reuse
``~/.ssh/id_rsa.pub`` when it exists, otherwise create an RSA key pair there, the private key
readable by its owner only (mode 0600). The private key is never read back, logged or returned.
"""
from __future__ import annotations

import logging
import os
import threading
from pathlib import Path
from typing import Optional

from .._models.errors import InvalidSpecError

__all__ = ["ensure_ssh_key", "default_private_key_path"]

log = logging.getLogger(__name__)

# Threads creating clusters at once must not race to generate the pair: one would find the
# private key written and its public half not yet there.
_GENERATING = threading.Lock()


def default_private_key_path() -> Path:
    return Path.home() / ".ssh" / "id_rsa"


def ensure_ssh_key(private_key_path: Optional[Path] = None) -> str:
    """The OpenSSH public key next to ``private_key_path`` (``<path>.pub``), generating the
    pair when neither file exists. Returns the public key line."""
    with _GENERATING:
        return _ensure_ssh_key(private_key_path)


def _ensure_ssh_key(private_key_path: Optional[Path]) -> str:
    private = Path(private_key_path) if private_key_path is not None else default_private_key_path()
    public = private.with_name(private.name + ".pub")
    if public.exists():
        text = public.read_text(encoding="ascii").strip()
        if not text.startswith(("ssh-rsa ", "ssh-ed25519 ", "ecdsa-sha2-")):
            raise InvalidSpecError("ssh_public_key", f"{public} does not hold an OpenSSH public key",
                                   "a file with one line like 'ssh-rsa AAAAB3... user@host'")
        log.debug("using the SSH public key in %s", public)
        return text
    if private.exists():
        raise InvalidSpecError("ssh_public_key", f"{private} exists but {public} does not",
                               f"restore {public} (ssh-keygen -y -f {private} > {public}) or pass ssh_public_key")
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
                            serialization.NoEncryption())
    # O_EXCL with mode 0600: the key is never readable by others, not even for an instant.
    fd = os.open(str(private), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(pem)
    openssh = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    line = openssh.decode("ascii") + " horovod-batchai"
    public.write_text(line + "\n", encoding="ascii")
    log.info("generated an SSH key pair: %s (private, mode 0600) and %s", private, public)
    return line

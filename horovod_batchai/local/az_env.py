"""The shell lines that point an installed Azure CLI at a running local service
(``horovod-batchai local az-env``); after ``eval "$(horovod-batchai local az-env)"`` the tutorial's
``az`` commands run unchanged against it.

What the lines do, and why:

* ``AZURE_CONFIG_DIR`` -- a CLI profile of the service's own, in its state directory: registering a
  cloud and logging in there leaves ``~/.azure`` (and real Azure) alone.
* ``REQUESTS_CA_BUNDLE`` -- the service's loopback certificate; every request the CLI makes goes
  through ``requests``, which takes its trust from this variable. (It replaces the system's bundle in
  this shell, so the same shell does not reach real Azure.)
* ``IDENTITY_ENDPOINT`` and ``IDENTITY_HEADER`` -- the service's managed-identity token endpoint, in
  the App Service protocol that ``az login --identity`` and azure-identity speak. The header's value
  is read from its file (mode 0600) when the lines run, so it never appears in this output.
* ``AZURE_STORAGE_CONNECTION_STRING`` -- read from a file (mode 0600) for the same reason: the
  account's key and its path-style endpoint ``{endpoint}/<account>``, as Azurite users set one. The
  CLI's storage commands then use that account whatever ``--account-name`` says. An account that
  does not exist yet is given the key it will be created with (see ``storage/keys.py``).
* ``az cloud register`` (or ``update``, when the port changed), ``az cloud set``, ``az login --identity``.

The profile's ``config`` turns off what the CLI would send to Microsoft on its own: telemetry
(``core.collect_telemetry``, uploaded after every command), the upgrade check after commands
(``auto-upgrade.enable``) and the survey prompt (``core.survey_message``). Other settings in that
file (the cloud ``az cloud set`` chose) are kept.

One lookup no setting turns off: the first time the CLI runs with a profile (and after each
upgrade) it asks Microsoft's release storage for its latest version, unless the profile's
``versionCheck.json`` already records the version installed (``handle_version_update`` in
azure-cli's ``azure/cli/core/util.py``, 2.91.0). So the lines' profile is given that record, for the
``az`` on ``PATH`` when they are made; with it, nothing the tutorial runs leaves the machine.
"""
from __future__ import annotations

import configparser
import json
import os
import re
import shlex
import shutil
import subprocess
from datetime import datetime
from pathlib import Path
from typing import Optional

from .core.identity import TOKEN_PATH, ensure_identity_header
from .core.tokens import LocalCredential, ensure_secret
from .resources.cloud_metadata import CLOUD_NAME
from .resources.subscriptions import DEFAULT_SUBSCRIPTION_ID
from .daemon import ServiceInfo
from .storage.keys import initial_key1

__all__ = ["az_env_lines", "CONFIG_DIR", "CONNECTION_STRING_FILE", "TUTORIAL_ACCOUNT", "VERSION_CHECK_FILE"]

CONFIG_DIR = "azure-cli"
CONNECTION_STRING_FILE = "storage-connection-string"
#: the storage account the tutorial creates.
TUTORIAL_ACCOUNT = "mystorageaccount"
_ACCOUNT_NAME = re.compile(r"^[a-z0-9]{3,24}\Z")


def _current_key1(info: ServiceInfo, account: str) -> Optional[str]:
    """key1 of the account if it exists (it may have been regenerated), through ARM like any client."""
    from azure.mgmt.storage import StorageManagementClient
    with StorageManagementClient(LocalCredential(info.state_dir), DEFAULT_SUBSCRIPTION_ID, base_url=info.endpoint,
                                 connection_verify=str(info.ca_cert)) as client:
        for found in client.storage_accounts.list():
            if found.name == account and found.id:
                group = found.id.split("/")[4]
                result = client.storage_accounts.list_keys(group, account)
                keys = getattr(result, "keys_property", None) or getattr(result, "keys", None) or []
                return next((k.value for k in keys if k.key_name == "key1"), None)
    return None


def _write_private(path: Path, text: str) -> None:
    fd = os.open(str(path), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    os.chmod(path, 0o600)  # an older file may have been made with other modes


#: what the CLI's profile sets so that the CLI reaches nothing but the local service by itself
QUIET_SETTINGS = {("core", "collect_telemetry"): "no", ("core", "survey_message"): "no",
                  ("auto-upgrade", "enable"): "no"}


def _quiet_profile(config_dir: Path) -> None:
    """Turn the CLI's telemetry, update check and survey off in ``config_dir/config``, keeping the rest."""
    path = config_dir / "config"
    config = configparser.ConfigParser(interpolation=None)
    if path.exists():
        config.read(path, encoding="utf-8")
    for (section, key), value in QUIET_SETTINGS.items():
        if not config.has_section(section):
            config.add_section(section)
        config.set(section, key, value)
    fd = os.open(str(path), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        config.write(fh)
    os.chmod(path, 0o600)  # an older file may have been made with other modes


#: what the profile's versionCheck.json records, so that the CLI does not look its latest version up
VERSION_CHECK_FILE = "versionCheck.json"
# How installers start the CLI's Python: a pip script's shebang, or a shell line such as
# `/opt/az/bin/python3 -Im azure.cli "$@"` (deb, rpm) or `exec "/.../python" -m azure.cli "$@"`.
_AZ_PYTHON_LINE = re.compile(r'^\s*(?:exec\s+)?"?([^"\s]*python[0-9.]*)"?\s+-I?m\s+azure\.cli\b', re.MULTILINE)


def _az_python(az: Path) -> Optional[str]:
    """The Python interpreter the ``az`` command at ``az`` runs the CLI with, if it can be told."""
    try:
        text = az.read_text(encoding="utf-8", errors="replace")[:4096]
    except OSError:
        return None
    first = text.splitlines()[0] if text else ""
    if first.startswith("#!") and "python" in first and "env " not in first:
        return first[2:].strip().split()[0]
    found = _AZ_PYTHON_LINE.search(text)
    return found.group(1) if found else None


def _installed_az_version() -> Optional[str]:
    """The version of the Azure CLI that ``az`` on PATH runs, asked of its own Python (no network)."""
    az = shutil.which("az")
    python = _az_python(Path(az)) if az else None
    if python is None:
        return None
    try:
        done = subprocess.run([python, "-c", "from importlib.metadata import version; "
                                             "print(version('azure-cli-core'))"],
                              capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    version = done.stdout.strip()
    return version if done.returncode == 0 and re.fullmatch(r"[0-9][0-9A-Za-z.+-]*", version) else None


def _record_installed_version(config_dir: Path) -> None:
    """Write the profile's versionCheck.json for the installed CLI (see the module docstring)."""
    version = _installed_az_version()
    if version is None:
        return  # no az on PATH yet, or one that could not be asked: the CLI looks it up once
    record = {"versions": {"azure-cli": {"local": version}, "core": {"local": version}},
              "update_time": datetime.now().strftime("%Y-%m-%d %H:%M:%S.%f")}
    path = config_dir / VERSION_CHECK_FILE
    try:
        kept = json.loads(path.read_text(encoding="utf-8-sig"))
        if kept.get("versions", {}).get("core", {}).get("local") == version:
            return  # the CLI's own record for this version: left as it is
    except (OSError, ValueError, AttributeError):
        pass
    _write_private(path, json.dumps(record))


def az_env_lines(info: ServiceInfo, *, storage_account: str = TUTORIAL_ACCOUNT) -> list[str]:
    """The lines for the service ``info`` describes; writes the two 0600 files they read."""
    if not _ACCOUNT_NAME.match(storage_account):
        raise ValueError(f"--storage-account: {storage_account!r} is not a storage account name "
                         "(3 to 24 lower-case letters and digits, e.g. mystorageaccount)")
    state_dir = Path(info.state_dir)
    config_dir = state_dir / CONFIG_DIR
    config_dir.mkdir(mode=0o700, exist_ok=True)
    _quiet_profile(config_dir)
    _record_installed_version(config_dir)
    header_file = ensure_identity_header(state_dir)
    key = _current_key1(info, storage_account) or initial_key1(ensure_secret(state_dir), storage_account)
    connection_file = config_dir / CONNECTION_STRING_FILE
    _write_private(connection_file, f"DefaultEndpointsProtocol=https;AccountName={storage_account};AccountKey={key};"
                                    f"FileEndpoint={info.endpoint}/{storage_account}")
    endpoint = shlex.quote(info.endpoint)
    cloud = f"--name {CLOUD_NAME} --endpoint-resource-manager {endpoint} --output none"
    return [
        f"# The Azure CLI, pointed at the local service at {info.endpoint} (state in {state_dir}).",
        f"export AZURE_CONFIG_DIR={shlex.quote(str(config_dir))}",
        f"export REQUESTS_CA_BUNDLE={shlex.quote(str(info.ca_cert))}",
        f"export IDENTITY_ENDPOINT={shlex.quote(info.endpoint + TOKEN_PATH)}",
        f'export IDENTITY_HEADER="$(cat {shlex.quote(str(header_file))})"',
        f"# az storage commands use the account {storage_account}, at {info.endpoint}/{storage_account}.",
        f'export AZURE_STORAGE_CONNECTION_STRING="$(cat {shlex.quote(str(connection_file))})"',
        f"az cloud update {cloud} 2>/dev/null || az cloud register {cloud}",
        f"az cloud set --name {CLOUD_NAME} --output none",
        "az login --identity --output none",
    ]

"""`horovod-batchai local az-env`: the shell lines that point the Azure CLI at the local service. No
secret is printed -- the identity header and the storage connection string are read from 0600 files
when the lines run -- and the connection string holds the key the account has, or will be created
with. (The lines driving a real az: tests/azure_cli.)"""
from __future__ import annotations

import shlex
import stat
import subprocess

from horovod_batchai.local import LocalService
from horovod_batchai.local.az_env import CONFIG_DIR, CONNECTION_STRING_FILE
from horovod_batchai.local.core.identity import IDENTITY_HEADER_FILE

from service_support import SUBSCRIPTION, client_kwargs


def _exports(lines: str) -> dict[str, str]:
    """What the export lines set, evaluated by bash (without the az lines)."""
    exports = "\n".join(line for line in lines.splitlines() if line.startswith("export "))
    names = [line.split("=", 1)[0].split()[1] for line in exports.splitlines()]
    script = exports + "\n" + "\n".join(f'printf "%s\\0%s\\0" {n} "${n}"' for n in names)
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True).stdout.split("\0")
    return dict(zip(out[0::2], out[1::2]))


def test_the_lines_point_at_the_service_and_print_no_secret(cli, service: LocalService):
    run = cli("local", "az-env")
    assert run.code == 0, run.err
    env = _exports(run.out)
    state = service.state_dir
    assert env["AZURE_CONFIG_DIR"] == str(state / CONFIG_DIR)
    assert env["REQUESTS_CA_BUNDLE"] == str(service.info.ca_cert)
    assert env["IDENTITY_ENDPOINT"] == service.endpoint + "/msi/token"
    assert env["IDENTITY_HEADER"] == (state / IDENTITY_HEADER_FILE).read_text()
    fields = dict(part.split("=", 1) for part in env["AZURE_STORAGE_CONNECTION_STRING"].split(";"))
    assert fields["AccountName"] == "mystorageaccount"
    assert fields["FileEndpoint"] == f"{service.endpoint}/mystorageaccount"
    for secret in (env["IDENTITY_HEADER"], fields["AccountKey"], (state / "token-secret").read_text().strip()):
        assert secret not in run.out
    for private in (state / IDENTITY_HEADER_FILE, state / CONFIG_DIR / CONNECTION_STRING_FILE):
        assert stat.S_IMODE(private.stat().st_mode) == 0o600
    assert any(line.startswith("az login --identity") for line in run.out.splitlines())
    assert all(shlex.split(line) for line in run.out.splitlines() if not line.startswith("#"))


def test_the_key_is_the_one_the_account_gets_and_then_has(cli, service: LocalService):
    from azure.mgmt.resource.resources import ResourceManagementClient
    from azure.mgmt.storage import StorageManagementClient

    def promised() -> str:
        lines = cli("local", "az-env", "--storage-account", "acct1").out
        return dict(p.split("=", 1) for p in _exports(lines)["AZURE_STORAGE_CONNECTION_STRING"].split(";"))["AccountKey"]

    before = promised()
    with ResourceManagementClient(service.credential(), SUBSCRIPTION, **client_kwargs(service)) as resources, \
            StorageManagementClient(service.credential(), SUBSCRIPTION, **client_kwargs(service)) as storage:
        resources.resource_groups.create_or_update("rg", {"location": "eastus"})
        storage.storage_accounts.begin_create("rg", "acct1", {"location": "eastus", "sku": {"name": "Standard_LRS"},
                                                              "kind": "StorageV2"}).result()
        keys = [k.value for k in storage.storage_accounts.list_keys("rg", "acct1").keys_property]
        assert keys[0] == before != keys[1]
        regenerated = storage.storage_accounts.regenerate_key("rg", "acct1", {"keyName": "key1"}).keys_property[0].value
    assert regenerated != before and promised() == regenerated


def test_a_bad_account_name_is_a_usage_error(cli):
    run = cli("local", "az-env", "--storage-account", "My_Account")
    assert run.code == 2 and "--storage-account" in run.err and "'My_Account'" in run.err
    assert run.out == ""


def test_the_profile_turns_off_what_az_sends_to_microsoft_and_keeps_the_rest(cli, service: LocalService):
    import configparser
    config_file = service.state_dir / CONFIG_DIR / "config"
    config_file.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    config_file.write_text("[cloud]\nname = HorovodBatchAILocal\n\n[core]\ncollect_telemetry = yes\n")
    assert cli("local", "az-env").code == 0
    config = configparser.ConfigParser()
    config.read(config_file)
    assert config.get("core", "collect_telemetry") == "no"      # no upload after every command
    assert config.get("auto-upgrade", "enable") == "no"         # no check for a newer az
    assert config.get("core", "survey_message") == "no"
    assert config.get("cloud", "name") == "HorovodBatchAILocal"  # what az itself keeps there stays
    assert stat.S_IMODE(config_file.stat().st_mode) == 0o600


def test_the_profile_turns_off_what_the_cli_sends_by_itself(cli, service: LocalService, tmp_path, monkeypatch):
    import configparser
    import json

    from horovod_batchai.local.az_env import QUIET_SETTINGS, VERSION_CHECK_FILE
    # An `az` as deb packages install it, whose Python says which azure-cli it holds.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    python = bin_dir / "azpython"
    python.write_text("#!/bin/sh\necho 2.91.0\n")
    az = bin_dir / "az"
    az.write_text(f'#!/usr/bin/env bash\n{python} -Im azure.cli "$@"\n')
    for script in (python, az):
        script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    assert cli("local", "az-env").code == 0
    profile = service.state_dir / CONFIG_DIR
    config = configparser.ConfigParser()
    config.read(profile / "config")
    assert {(s, k): config.get(s, k) for s, k in QUIET_SETTINGS} == {
        ("core", "collect_telemetry"): "no", ("core", "survey_message"): "no", ("auto-upgrade", "enable"): "no"}
    # No setting stops the CLI's lookup of its latest version on a profile's first run; a record of
    # the installed version does.
    record = json.loads((profile / VERSION_CHECK_FILE).read_text())
    assert record["versions"]["core"] == record["versions"]["azure-cli"] == {"local": "2.91.0"}
    assert stat.S_IMODE((profile / VERSION_CHECK_FILE).stat().st_mode) == 0o600

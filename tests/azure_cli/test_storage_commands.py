"""What a pipeline scripts with the Azure CLI beyond the tutorial: file shares through ARM
(`az storage share-rm`), seen by the data-plane commands (`az storage share`) and the other way round,
and server-side copies (`az storage file copy start`) within an account and from another account's
file through the SAS the CLI makes for it. azure-cli from PyPI, in its own virtualenv, after
`eval "$(horovod-batchai local az-env --storage-account pipelinestore)"`: the data-plane commands
use that account (the connection string az-env sets); another account's files are reached with a
connection string of its own, made from its key as a script would."""
from __future__ import annotations

import json
from pathlib import Path

from az_support import az_env, checked, run
from client_venvs import azure_cli, ensure
from horovod_batchai.local import LocalService, ServiceSettings

RG = "--resource-group pipeline.rg"


def _setup(tmp_path: Path, svc: LocalService) -> tuple[dict[str, str], Path]:
    home = tmp_path / "home"
    home.mkdir()
    env = az_env(svc.state_dir, home, ensure(azure_cli()), storage_account="pipelinestore")
    checked("az group create --name pipeline.rg --location eastus --output none", env, home)
    checked(f"az storage account create {RG} --name pipelinestore --location eastus --sku Standard_LRS --output none",
            env, home)
    return env, home


def test_share_rm_commands_and_the_data_plane_see_one_share(tmp_path: Path) -> None:
    with LocalService(tmp_path / "state", settings=ServiceSettings(provision_delay_s=0.1)) as svc:
        env, home = _setup(tmp_path, svc)
        where = f"{RG} --storage-account pipelinestore"

        created = json.loads(checked(f"az storage share-rm create {where} --name armshare --quota 10 "
                                     "--metadata stage=raw --access-tier Cool", env, home))
        assert (created["name"], created["shareQuota"], created["accessTier"], created["metadata"]) == (
            "armshare", 10, "Cool", {"stage": "raw"})
        shown = json.loads(checked(f"az storage share-rm show {where} --name armshare", env, home))
        assert shown["id"] == created["id"] and shown["enabledProtocols"] == "SMB"
        # The same share on the data plane (the account's connection string, as az-env sets it).
        on_data_plane = json.loads(checked("az storage share show --name armshare --account-name pipelinestore",
                                           env, home))
        assert (on_data_plane["properties"]["quota"], on_data_plane["metadata"]) == (10, {"stage": "raw"})

        # A share made on the data plane is listed through ARM, with its usage.
        checked("az storage share create --name datashare --account-name pipelinestore --output none", env, home)
        (home / "data.txt").write_bytes(b"x" * 1234)
        checked("az storage file upload --share-name datashare --source data.txt --account-name pipelinestore "
                "--output none", env, home)
        listed = json.loads(checked(f"az storage share-rm list {where}", env, home))
        assert sorted(s["name"] for s in listed) == ["armshare", "datashare"]
        assert json.loads(checked(f"az storage share-rm stats {where} --name datashare", env, home)) == 1234

        updated = json.loads(checked(f"az storage share-rm update {where} --name armshare --quota 20", env, home))
        assert (updated["shareQuota"], updated["accessTier"]) == (20, "Cool")
        assert json.loads(checked("az storage share show --name armshare --account-name pipelinestore", env,
                                  home))["properties"]["quota"] == 20

        checked(f"az storage share-rm delete {where} --name armshare --yes", env, home)
        assert json.loads(checked("az storage share exists --name armshare --account-name pipelinestore", env,
                                  home)) == {"exists": False}
        assert json.loads(checked(f"az storage share-rm exists {where} --name armshare", env, home)) == {
            "exists": False}
        # NFS needs a premium file account: refused with Azure's code, and nothing made.
        refused = run(f"az storage share-rm create {where} --name nfsshare --enabled-protocols NFS", env, home)
        assert refused.returncode != 0 and "FeatureNotSupportedForAccount" in refused.stderr
        assert not json.loads(checked(f"az storage share-rm exists {where} --name nfsshare", env, home))["exists"]


def test_file_copy_start_within_an_account_and_from_another(tmp_path: Path) -> None:
    # Files over 1 MiB are copied in the background, crawling (one 4 MiB chunk, then a minute's
    # wait), so the large copy below is still pending when it is cancelled.
    settings = ServiceSettings(provision_delay_s=0.1, copy_sync_max_bytes=1024 * 1024, copy_bytes_per_s=64 * 1024)
    with LocalService(tmp_path / "state", settings=settings) as svc:
        env, home = _setup(tmp_path, svc)
        checked(f"az storage account create {RG} --name otherstore --location eastus --sku Standard_LRS "
                "--output none", env, home)
        key = json.loads(checked(f"az storage account keys list {RG} --account-name otherstore", env, home))[0]["value"]
        other = (f'--connection-string "DefaultEndpointsProtocol=https;AccountName=otherstore;AccountKey={key};'
                 f'FileEndpoint={svc.endpoint}/otherstore"')
        checked(f"az storage share-rm create {RG} --storage-account otherstore --name data --output none", env, home)
        checked("az storage share create --name data --output none", env, home)
        (home / "model.h5").write_bytes(b"\x89HDF\r\n\x1a\n" + bytes(range(256)) * 40)
        checked(f"az storage file upload --share-name data --source model.h5 --metadata epoch=3 {other} --output none",
                env, home)
        checked("az storage file upload --share-name data --source model.h5 --output none", env, home)

        # Within the account: the CLI builds the source URL; the account key reads it.
        inside = json.loads(checked("az storage file copy start --account-name pipelinestore --destination-share data "
                                    "--destination-path model-copy.h5 --source-share data --source-path model.h5",
                                    env, home))
        assert inside["status"] == "success" and inside["id"]

        # From another account: the CLI fetches that account's key through ARM and makes a file SAS.
        across = json.loads(checked("az storage file copy start --account-name pipelinestore --destination-share data "
                                    "--destination-path from-other.h5 --source-share data --source-path model.h5 "
                                    "--source-account-name otherstore", env, home))
        assert across["status"] == "success"
        shown = json.loads(checked("az storage file show --share-name data --path from-other.h5 "
                                   "--account-name pipelinestore", env, home))
        copy = shown["properties"]["copy"]
        assert (copy["id"], copy["status"], copy["progress"]) == (across["id"], "success", "10248/10248")
        assert "otherstore" in copy["source"] and "sig=" not in copy["source"]
        assert shown["metadata"] == {"epoch": "3"}
        checked("az storage file download --share-name data --path from-other.h5 --account-name pipelinestore "
                "--output none", env, home)
        assert (home / "from-other.h5").read_bytes() == (home / "model.h5").read_bytes()

        # A source URL of another account without a SAS cannot be read.
        refused = run("az storage file copy start --account-name pipelinestore --destination-share data "
                      f"--destination-path refused.h5 --source-uri {svc.endpoint}/otherstore/data/model.h5",
                      env, home)
        assert refused.returncode != 0 and "CannotVerifyCopySource" in refused.stderr

        # A large copy: pending, its progress on the file, cancelled to an empty file.
        (home / "big.bin").write_bytes(bytes(range(256)) * (32 * 1024))  # 8 MiB
        checked("az storage file upload --share-name data --source big.bin --output none", env, home)
        pending = json.loads(checked("az storage file copy start --destination-share data --destination-path "
                                     "big-copy.bin --source-share data --source-path big.bin", env, home))
        assert pending["status"] == "pending"
        shown = json.loads(checked("az storage file show --share-name data --path big-copy.bin", env, home))
        assert shown["properties"]["copy"]["status"] == "pending"
        assert shown["properties"]["copy"]["progress"].endswith(f"/{8 * 1024 * 1024}")
        checked(f"az storage file copy cancel --destination-share data --destination-path big-copy.bin "
                f"--copy-id {pending['id']}", env, home)
        shown = json.loads(checked("az storage file show --share-name data --path big-copy.bin", env, home))
        assert (shown["properties"]["copy"]["status"], shown["properties"]["contentLength"]) == ("aborted", 0)

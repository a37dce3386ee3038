"""The command line on Azure ML: ``--target azureml`` with the subscription, resource group and
workspace, and the client options users need (``--proxy``, ``--retries``) reaching every
request -- checked by the replay transport, which sees each request's proxy settings."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from horovod_batchai import Target

import scenario as S
from replay import FakeCredential, ReplayTransport

JOB_JSON = Path(__file__).resolve().parents[2] / "examples" / "job.json"
PROXY = "http://proxy.example.com:3128"


@pytest.fixture
def cli_targets(transport: ReplayTransport, monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Target.azureml as the CLI calls it, with the replay transport and a credential that needs
    no Azure AD added; returns the client options the CLI gave it."""
    made: list[dict[str, Any]] = []
    real = Target.azureml.__func__  # type: ignore[attr-defined]

    def azureml(cls: type, subscription_id: str, resource_group: str, workspace: str, credential: Any = None,
                **options: Any) -> Target:
        made.append({"subscription_id": subscription_id, "resource_group": resource_group, "workspace": workspace,
                     **options})
        return real(cls, subscription_id, resource_group, workspace, credential=FakeCredential(),
                    transport=transport, **options)

    monkeypatch.setattr(Target, "azureml", classmethod(azureml))
    return made


def _main(*argv: str) -> int:
    from horovod_batchai.cli.run import main
    return main(["--target", "azureml", "--subscription", S.SUB, "--proxy", PROXY, "--retries", "2", *argv])


def test_cluster_show_on_azure_ml(cli_targets: list, transport: ReplayTransport,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    transport.add(S.compute_get_creating(), S.compute_get_creating())  # the cluster, then its status
    code = _main("cluster", "show", "-g", S.RG, "-w", S.WS, "-n", S.CLUSTER, "--json")
    out = capsys.readouterr()
    assert code == 0, out.err
    shown = json.loads(out.out)
    assert json.dumps(shown).count("Standard_DS2_v2") >= 1
    assert cli_targets == [{"subscription_id": S.SUB, "resource_group": S.RG, "workspace": S.WS,
                            "proxies": {"http": PROXY, "https": PROXY}, "retry_total": 2}]
    assert transport.proxies and all(p.get("https") == PROXY for p in transport.proxies)
    transport.verify()


def test_job_create_on_azure_ml(cli_targets: list, transport: ReplayTransport,
                                capsys: pytest.CaptureFixture[str]) -> None:
    """The tutorial's job.json submitted from the command line: the storage key, the share's
    datastore, the cluster, the environment and the job, every request through the proxy."""
    keys = S.share_create(*S.storage_api_versions())[3]
    submitted = S.SubmittedJob()
    transport.add(keys, S.compute_get(3), S.datastore_get(), *S.job_submit(submitted))
    code = _main("job", "create", "-g", S.RG, "-w", S.WS, "-e", S.EXPERIMENT, "-n", S.JOB, "-c", S.CLUSTER,
                 "-f", str(JOB_JSON), "--storage-account-name", S.ACCOUNT, "--node-count", "2", "--json")
    out = capsys.readouterr()
    assert code == 0, out.err
    assert S.ACCOUNT_KEY not in out.out + out.err
    assert len(transport.proxies) == len(transport.requests) and all(
        p.get("https") == PROXY for p in transport.proxies)
    transport.verify()


@pytest.mark.parametrize("argv, words", [
    (["--proxy", "http://user:hunter2@proxy.example.com:3128"], "does not belong on the command line"),
    (["--proxy", "proxy.example.com:3128"], "expected a proxy URL"),
    (["--retries", "-1"], "expected a number of retries from 0 to 100"),
])
def test_bad_client_options_are_usage_errors(argv: list, words: str, transport: ReplayTransport,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    from horovod_batchai.cli.run import main
    code = main(["--target", "azureml", "--subscription", S.SUB, *argv, "cluster", "show", "-g", S.RG, "-w", S.WS,
                 "-n", S.CLUSTER])
    err = capsys.readouterr().err
    assert code == 2 and words in err and "hunter2" not in err
    assert transport.requests == []


def test_azure_ml_needs_its_workspace(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from horovod_batchai.cli.run import main
    monkeypatch.delenv("AZURE_RESOURCE_GROUP", raising=False)
    monkeypatch.delenv("AZUREML_WORKSPACE_NAME", raising=False)
    monkeypatch.delenv("AZURE_SUBSCRIPTION_ID", raising=False)
    assert main(["--target", "azureml", "experiment", "list", "-g", S.RG, "-w", S.WS]) == 2
    assert "--subscription" in capsys.readouterr().err


def _job_json_without_image(tmp_path: Path) -> Path:
    """The tutorial's job.json with its TensorFlow 1.8 image and its preparation removed: what
    ``--package-environment`` runs."""
    document = json.loads(JOB_JSON.read_text(encoding="utf-8"))
    del document["properties"]["containerSettings"], document["properties"]["jobPreparation"]
    path = tmp_path / "job.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def test_the_tutorials_job_in_the_package_environment_from_the_cli(cli_targets: list, transport: ReplayTransport,
                                                                   capsys: pytest.CaptureFixture[str],
                                                                   tmp_path: Path) -> None:
    """``job create --package-environment``: job.json without its TensorFlow 1.8 image and its
    preparation; the package's build context is uploaded through the proxy like everything else."""
    from test_tutorial_replay import _context_files
    keys = S.share_create(*S.storage_api_versions())[3]
    submitted, upload = S.SubmittedJob(), S.ContextUpload()
    files = _context_files()
    transport.add(keys, S.compute_get(3), S.datastore_get(), *S.job_submit_built(submitted, upload, list(files)))
    code = _main("job", "create", "-g", S.RG, "-w", S.WS, "-e", S.EXPERIMENT, "-n", S.JOB, "-c", S.CLUSTER,
                 "-f", str(_job_json_without_image(tmp_path)), "--storage-account-name", S.ACCOUNT,
                 "--node-count", "2", "--package-environment", "--json")
    out = capsys.readouterr()
    assert code == 0, out.err
    assert upload.blobs == files and submitted.sent is not None and S.TUTORIAL_IMAGE not in str(submitted.sent)
    assert len(transport.proxies) == len(transport.requests) and all(
        p.get("https") == PROXY for p in transport.proxies)
    transport.verify()


def test_the_package_environment_is_azure_mls_only(capsys: pytest.CaptureFixture[str]) -> None:
    from horovod_batchai.cli.run import main
    code = main(["--target", "local", "job", "create", "-g", S.RG, "-w", S.WS, "-e", S.EXPERIMENT, "-n", S.JOB,
                 "-c", S.CLUSTER, "-f", str(JOB_JSON), "--package-environment"])
    assert code == 2 and "only Azure ML builds the package's Docker environment" in capsys.readouterr().err


@pytest.mark.parametrize("drop, named", [
    ((), ("containerSettings.imageSourceRegistry.image 'tensorflow/tensorflow:1.8.0-gpu'", "a jobPreparation")),
    (("jobPreparation",), ("containerSettings.imageSourceRegistry.image 'tensorflow/tensorflow:1.8.0-gpu'",)),
    (("containerSettings",), ("a jobPreparation",)),
])
def test_the_package_environment_refuses_a_file_that_names_an_image_or_a_preparation(
        cli_targets: list, transport: ReplayTransport, capsys: pytest.CaptureFixture[str], tmp_path: Path,
        drop: tuple, named: tuple) -> None:
    """The package's environment would replace the file's image and its preparation: the
    combination is a usage error naming the option and what the file names, on one line, and
    nothing is sent (the replay expects no request)."""
    document = json.loads(JOB_JSON.read_text(encoding="utf-8"))
    for key in drop:
        del document["properties"][key]
    path = tmp_path / "job.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    code = _main("job", "create", "-g", S.RG, "-w", S.WS, "-e", S.EXPERIMENT, "-n", S.JOB, "-c", S.CLUSTER,
                 "-f", str(path), "--storage-account-name", S.ACCOUNT, "--package-environment")
    err = capsys.readouterr().err
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "--package-environment" in lines[0] and str(path) in lines[0], err
    assert all(name in lines[0] for name in named), err
    assert ("image" in lines[0]) == ("containerSettings" not in drop)
    assert transport.requests == []
    transport.verify()

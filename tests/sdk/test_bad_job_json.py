"""A corpus of broken job.json files: each gets an InvalidSpecError naming the property path as
written, the file and the valid form -- before anything is sent -- and the CLI says so in one line.

``bad_job_json/expected_errors.json`` holds, for each file, the property the error must name, a
piece of the problem it must state, when it is caught (``load``: ``HorovodJob.from_file``;
``submit``: once the cluster is known) and the rule that makes the file wrong. A few cases too big
to keep as files are generated here (``GENERATED``). ``good_job_json`` holds the valid document
every case is a variation of, and one that uses every property: both must be accepted.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from horovod_batchai import Experiment, FileShare, GpuCluster, HorovodJob, InvalidSpecError, Target, Workspace
from horovod_batchai.cli import main
from horovod_batchai.local import LocalService

from sdk_support import ACCOUNT, RG, SSH_KEY
from service_support import FAST

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "bad_job_json"
GOOD = HERE / "good_job_json"
EXPECTED: dict[str, dict[str, str]] = json.loads((CORPUS / "expected_errors.json").read_text(encoding="utf-8"))
BASE: dict[str, Any] = json.loads((GOOD / "base.json").read_text(encoding="utf-8"))
HORO = "properties.horovodSettings"


def _with(path: str, value: Any) -> Callable[[Path], Path]:
    """A generator: the base document with ``properties.<path>`` set to ``value``, written to a file."""
    def write(directory: Path) -> Path:
        document = json.loads(json.dumps(BASE))
        node = document["properties"]
        *head, last = path.split(".")
        for key in head:
            node = node[key]
        node[last] = value
        target = directory / "generated.json"
        target.write_text(json.dumps(document), encoding="utf-8")
        return target
    return write


def _padded(directory: Path) -> Path:
    """A 5 MiB document: valid JSON, but more than ARM accepts in one request."""
    target = directory / "padded.json"
    document = json.loads(json.dumps(BASE))
    document["properties"]["jobPreparation"]["commandLine"] = "#" + " " * (5 * 1024 * 1024)
    target.write_text(json.dumps(document), encoding="utf-8")
    return target


#: cases built at test time: (generator, expected) with the expected entry's meaning as in the table
GENERATED: dict[str, tuple[Callable[[Path], Path], dict[str, str]]] = {
    "commandlineargs-2mb": (_with("horovodSettings.commandLineArgs", "--x " * (512 * 1024)), {
        "field": f"{HORO}.commandLineArgs", "problem": "is 2097152 bytes long", "stage": "load",
        "rule": "the service runs the command as one process argument, which Linux caps at 131072 bytes; "
                "commandLineArgs gets half (it used to fail inside the service with InternalError)"}),
    "document-over-4mib": (_padded, {
        "field": "the document", "problem": "bytes long", "stage": "load",
        "rule": "ARM refuses request bodies over 4 MiB"}),
    "env-value-over-one-argument": (_with("environmentVariables", [{"name": "BLOB", "value": "v" * 200_000}]), {
        "field": "properties.environmentVariables[0].value", "problem": "bytes long", "stage": "load",
        "rule": "NAME=value is one environment string, which Linux caps at 131072 bytes"}),
    "environment-over-1mib": (_with("secrets", [{"name": f"S{i}", "value": "v" * 100_000} for i in range(12)]), {
        "field": "properties.environmentVariables and properties.secrets", "problem": "bytes of NAME=value",
        "stage": "load", "rule": "all variables share ARG_MAX (2 MiB) with the command line; they get half"}),
}
CASES = sorted(EXPECTED) + sorted(GENERATED)


# -- one local service, workspace, share and 2-node cluster for the whole corpus ---------------------
@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalService]:
    svc = LocalService(tmp_path_factory.mktemp("corpus") / "state", settings=FAST).start()
    try:
        yield svc
    finally:
        svc.stop()


@pytest.fixture(scope="module")
def target(service: LocalService) -> Iterator[Target]:
    with Target.local(service=service) as t:
        yield t


@pytest.fixture(scope="module")
def workspace(target: Target) -> Workspace:
    return Workspace.create(target, RG, "batchaidev", location="eastus")


@pytest.fixture(scope="module")
def share(target: Target) -> FileShare:
    return FileShare.create(target, RG, ACCOUNT, "myshare", location="eastus")


@pytest.fixture(scope="module")
def cluster(workspace: Workspace) -> GpuCluster:
    return workspace.create_cluster("nc6cluster", vm_size="Standard_NC6", target_node_count=2, admin_user_name="demo",
                                    ssh_public_key=SSH_KEY)


@pytest.fixture(scope="module")
def experiment(workspace: Workspace) -> Experiment:
    return workspace.create_experiment("corpus")


def _case(name: str, tmp_path: Path) -> tuple[Path, dict[str, str]]:
    if name in GENERATED:
        generate, expected = GENERATED[name]
        return generate(tmp_path), expected
    return CORPUS / name, EXPECTED[name]


def test_the_corpus_is_large_and_every_file_has_its_expected_error() -> None:
    files = {p.name for p in CORPUS.glob("*.json")} - {"expected_errors.json"}
    assert files == set(EXPECTED)
    assert len(CASES) >= 80
    for name, expected in [*EXPECTED.items(), *((n, e) for n, (_, e) in GENERATED.items())]:
        assert expected["field"] and expected["problem"] and expected["rule"], name
        assert expected["stage"] in ("load", "submit"), name


@pytest.mark.parametrize("name", CASES)
def test_each_broken_job_json_is_refused_naming_the_property_before_anything_is_sent(
        name: str, tmp_path: Path, share: FileShare, cluster: GpuCluster, experiment: Experiment) -> None:
    path, expected = _case(name, tmp_path)
    with pytest.raises(InvalidSpecError) as info:
        spec = HorovodJob.from_file(path, storage=share)
        assert expected["stage"] == "submit", f"{name} was accepted: {spec!r}"
        experiment.submit("corpus-job", spec, cluster=cluster)
    err = info.value
    assert (err.field, err.source) == (expected["field"], str(path)), str(err)
    assert expected["problem"] in err.problem, str(err)
    assert err.valid_form and str(err) == f"{path}: {err.field}: {err.problem} (valid: {err.valid_form})"
    assert len(str(err)) < 1500  # a 2 MB value is described, not repeated
    # no chained exception: printing it shows this one error, not the parser's or the client's
    assert err.__cause__ is None and (err.__context__ is None or err.__suppress_context__)
    assert experiment.list_jobs() == []


def test_secret_values_in_broken_files_are_not_repeated(share: FileShare) -> None:
    for name, secret in (("registry-serverurl-with-password", "Hunter2-pw"), ("accountkey-number", "123456789"),
                         ("secret-value-number", "31337")):
        file = next(CORPUS.glob(f"*-{name}.json"))
        with pytest.raises(InvalidSpecError) as info:
            HorovodJob.from_file(file, storage=share)
        assert secret not in str(info.value), name


@pytest.mark.parametrize("name", ["001-missing-nodecount.json", "009-nul-in-script-path.json",
                                  "010-azurefileurl-not-a-url.json", "027-deeply-nested.json",
                                  "015-utf8-bom.json", "commandlineargs-2mb"])
def test_the_cli_says_what_is_wrong_in_one_line(name: str, tmp_path: Path, service: LocalService,
                                                 capsys: pytest.CaptureFixture[str], share: FileShare,
                                                 cluster: GpuCluster, experiment: Experiment,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    path, expected = _case(name, tmp_path)
    capsys.readouterr()
    code = main(["--state-dir", str(service.state_dir), "job", "create", "-g", RG, "-w", "batchaidev",
                 "-e", "corpus", "-n", "cli-job", "-c", "nc6cluster", "-f", str(path),
                 "--storage-account-name", ACCOUNT])
    out, err = capsys.readouterr()
    assert code == 2, err
    assert not re.search(r"Traceback|File \"", out + err)
    (line,) = err.strip().splitlines()
    assert line.startswith(f"horovod-batchai: error: {path}: {expected['field']}: ") and "(valid: " in line
    assert experiment.list_jobs() == []


@pytest.mark.parametrize("document", ["base.json", "every-property.json"])
def test_valid_documents_are_accepted_whole(document: str, share: FileShare, cluster: GpuCluster,
                                            experiment: Experiment) -> None:
    """What each broken case varies is valid, and no rule refuses a property used correctly."""
    path = GOOD / document
    spec = HorovodJob.from_file(path, storage=share)
    properties = json.loads(path.read_text(encoding="utf-8"))["properties"]
    assert spec.node_count == properties["nodeCount"]
    assert spec.script == properties["horovodSettings"]["pythonScriptFilePath"]
    assert spec.std_out_err_path_prefix == properties["stdOutErrPathPrefix"]
    if document == "every-property.json":
        assert spec.secrets == {"TOKEN": "s3cret-t0ken"} and spec.environment_variables["EMPTY_IS_A_VALUE"] == ""
        assert spec.cluster_id == cluster.id and spec.shm_size == "2g" and spec.process_count == 4
        assert spec.container_registry is not None and spec.container_registry.password == "registry-Pa55word"
    job = experiment.submit(f"good-{path.stem}", spec, cluster=cluster)
    try:
        assert job.spec.script == spec.script
    finally:
        job.delete()

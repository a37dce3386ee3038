"""Workspaces, experiments and clusters through the command line: every verb, table and JSON
output, --query, and the exit statuses for bad input (2) and missing resources (3)."""
from __future__ import annotations

import stat
from pathlib import Path
from typing import Callable

import pytest

from horovod_batchai.cli import EXIT_NOT_FOUND, EXIT_USAGE, main

from cli_support import RG, SSH_KEY, WS, CliRun

Cli = Callable[..., CliRun]
CLUSTER = ["-g", RG, "-w", WS]


def test_workspace_verbs(cli: Cli) -> None:
    created = cli("workspace", "create", "-g", RG, "-n", WS, "-l", "westus2", "-o", "json")
    assert created.code == 0, created.err
    assert created.json() == {
        "id": f"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/{RG}"
              f"/providers/Microsoft.BatchAI/workspaces/{WS}",
        "name": WS, "resourceGroup": RG, "location": "westus2"}

    table = cli("workspace", "show", "-g", RG, "-n", WS)
    assert table.code == 0
    header, rule, row = table.out.splitlines()
    assert header.split() == ["Name", "Resource", "Group", "Location"]
    assert set(rule.replace(" ", "")) == {"-"}
    assert row.split() == [WS, RG, "westus2"]

    assert cli("workspace", "create", "-g", "other.rg", "-n", "second").code == 0
    listed = cli("workspace", "list", "--json")
    assert sorted(w["name"] for w in listed.json()) == ["batchaidev", "second"]
    in_group = cli("workspace", "list", "-g", RG, "-o", "json")
    assert [w["name"] for w in in_group.json()] == [WS]

    assert cli("workspace", "show", "-g", RG, "-n", WS, "--query", "location").out == "westus2\n"

    deleted = cli("workspace", "delete", "-g", "other.rg", "-n", "second", "--delete-resource-group", "-o", "json")
    assert deleted.code == 0
    assert deleted.json()["deleted"][-1].endswith("/resourceGroups/other.rg")
    gone = cli("workspace", "show", "-g", "other.rg", "-n", "second")
    assert gone.code == EXIT_NOT_FOUND
    assert "second" in gone.err and gone.out == ""
    # deleting what is already gone succeeds, as the SDK's delete does
    assert cli("workspace", "delete", "-g", "other.rg", "-n", "second").code == 0


def test_experiment_verbs(cli: Cli, workspace: str) -> None:
    created = cli("experiment", "create", *CLUSTER, "-n", "cifar", "-o", "json")
    assert created.code == 0
    assert created.json()["name"] == "cifar" and created.json()["workspace"] == WS
    assert created.json()["id"].endswith(f"/workspaces/{WS}/experiments/cifar")
    assert cli("experiment", "create", *CLUSTER, "-n", "mnist").code == 0
    listed = cli("experiment", "list", *CLUSTER, "-o", "json")
    assert sorted(e["name"] for e in listed.json()) == ["cifar", "mnist"]
    shown = cli("experiment", "show", *CLUSTER, "-n", "cifar")
    assert shown.code == 0 and shown.out.splitlines()[-1].split() == ["cifar", RG, WS]
    assert cli("experiment", "delete", *CLUSTER, "-n", "mnist").code == 0
    assert cli("experiment", "show", *CLUSTER, "-n", "mnist").code == EXIT_NOT_FOUND
    assert [e["name"] for e in cli("experiment", "list", *CLUSTER, "--json").json()] == ["cifar"]
    # a workspace that does not exist is "not found", for children too
    assert cli("experiment", "list", "-g", RG, "-w", "nowhere").code == EXIT_NOT_FOUND


def test_cluster_create_wait_show_like_the_tutorial(cli: Cli, workspace: str, clean_environment: Path) -> None:
    created = cli("cluster", "create", *CLUSTER, "-n", "nc6cluster", "--vm-priority", "dedicated",
                  "--vm-size", "Standard_NC6", "--target", "2", "--generate-ssh-keys", "--wait")
    assert created.code == 0, created.err
    header, _, row = created.out.splitlines()
    assert header.split() == ["Name", "Resource", "Group", "Workspace", "VM", "Size", "State", "Idle", "Running",
                              "Preparing", "Leaving", "Unusable"]
    assert row.split() == ["nc6cluster", RG, WS, "STANDARD_NC6", "steady", "2", "0", "0", "0", "0"]
    # progress of the wait goes to stderr, so that stdout stays machine-readable
    assert "nc6cluster: steady, 2 idle" in created.err
    # --generate-ssh-keys made a key pair in the (scratch) home, the private half for its owner only
    private = clean_environment / ".ssh" / "id_rsa"
    assert private.is_file() and (clean_environment / ".ssh" / "id_rsa.pub").is_file()
    assert stat.S_IMODE(private.stat().st_mode) == 0o600

    counts = cli("cluster", "show", *CLUSTER, "-n", "nc6cluster", "--query", "nodeStateCounts")
    assert counts.json() == {"idleNodeCount": 2, "leavingNodeCount": 0, "preparingNodeCount": 0,
                             "runningNodeCount": 0, "unusableNodeCount": 0}
    shown = cli("cluster", "show", *CLUSTER, "-n", "nc6cluster", "-o", "json").json()
    assert shown["vmSize"].lower() == "standard_nc6"
    assert shown["allocationState"] == "steady" and shown["currentNodeCount"] == 2
    assert shown["scaleSettings"] == {"manual": {"targetNodeCount": 2}}
    assert shown["errors"] == []
    assert cli("cluster", "show", *CLUSTER, "-n", "nc6cluster", "--query",
               "nodeStateCounts.idleNodeCount").out == "2\n"


def test_cluster_resize_auto_scale_list_delete(cli: Cli, workspace: str, tmp_path: Path) -> None:
    key = tmp_path / "id.pub"
    key.write_text(SSH_KEY + "\n")
    assert cli("cluster", "create", *CLUSTER, "-n", "small", "--target", "1", "--ssh-key-file", str(key),
               "-u", "demo").code == 0
    assert cli("cluster", "create", *CLUSTER, "-n", "elastic", "--min", "0", "--max", "3", "--ssh-key-file",
               str(key)).code == 0
    listed = cli("cluster", "list", *CLUSTER, "-o", "json").json()
    assert {c["name"]: c["scaleSettings"] for c in listed} == {
        "small": {"manual": {"targetNodeCount": 1}},
        "elastic": {"autoScale": {"minimumNodeCount": 0, "maximumNodeCount": 3}}}
    table = cli("cluster", "list", *CLUSTER)
    assert sorted(line.split()[0] for line in table.out.splitlines()[2:]) == ["elastic", "small"]

    assert cli("cluster", "wait", *CLUSTER, "-n", "small", "--timeout", "60").code == 0
    grown = cli("cluster", "resize", *CLUSTER, "-n", "small", "--target", "2", "--wait", "-o", "json")
    assert grown.code == 0
    assert grown.json()["nodeStateCounts"]["idleNodeCount"] == 2
    shrunk = cli("cluster", "resize", *CLUSTER, "-n", "small", "--target", "0", "--wait", "-o", "json")
    assert shrunk.json()["currentNodeCount"] == 0 and shrunk.json()["allocationState"] == "steady"
    scaled = cli("cluster", "resize", *CLUSTER, "-n", "small", "--min", "1", "--max", "2", "-o", "json")
    assert scaled.json()["scaleSettings"] == {"autoScale": {"minimumNodeCount": 1, "maximumNodeCount": 2}}

    assert cli("cluster", "delete", *CLUSTER, "-n", "elastic").code == 0
    assert cli("cluster", "show", *CLUSTER, "-n", "elastic").code == EXIT_NOT_FOUND
    assert [c["name"] for c in cli("cluster", "list", *CLUSTER, "--json").json()] == ["small"]


def test_cluster_password_is_never_printed(cli: Cli, workspace: str, tmp_path) -> None:
    password = "Pa55-word-not-to-print!"
    secret = tmp_path / "admin-password"
    secret.write_text(password + "\n")
    secret.chmod(0o600)
    runs = [cli("cluster", "create", *CLUSTER, "-n", "pwd", "--target", "0", "-u", "demo", "--password-file",
                str(secret), "-o", "json"),
            cli("cluster", "show", *CLUSTER, "-n", "pwd", "-o", "json"),
            cli("-v", "cluster", "show", *CLUSTER, "-n", "pwd")]
    for run in runs:
        assert run.code == 0
        assert password not in run.out + run.err


def test_a_password_on_the_command_line_is_refused_unused(cli: Cli, workspace: str) -> None:
    password = "Pa55-word-on-argv!"
    for flag in ("--password", "-p"):
        run = cli("cluster", "create", *CLUSTER, "-n", "pwd", "--target", "0", "-u", "demo", flag, password)
        assert run.code == EXIT_USAGE and password not in run.out + run.err
        assert "--password-file" in run.err and "visible to other users" in run.err
    assert cli("cluster", "list", *CLUSTER, "-o", "json").json() == []


def test_a_password_file_others_can_read_is_refused(cli: Cli, workspace: str, tmp_path) -> None:
    secret = tmp_path / "admin-password"
    secret.write_text("Pa55-word!\n")
    secret.chmod(0o644)
    run = cli("cluster", "create", *CLUSTER, "-n", "pwd", "--target", "0", "-u", "demo", "--password-file", str(secret))
    assert run.code == EXIT_USAGE and "--password-file" in run.err and "chmod 600" in run.err
    assert "Pa55-word!" not in run.out + run.err
    missing = cli("cluster", "create", *CLUSTER, "-n", "pwd", "--target", "0", "--password-file", str(tmp_path / "no"))
    assert missing.code == EXIT_USAGE and "--password-file" in missing.err
    assert cli("cluster", "list", *CLUSTER, "-o", "json").json() == []


def test_the_password_can_come_from_stdin_or_a_prompt(cli: Cli, workspace: str, monkeypatch) -> None:
    import getpass
    import io
    import sys
    from horovod_batchai import Workspace
    sent: list[object] = []  # the admin password each create_cluster was given
    create_cluster = Workspace.create_cluster
    monkeypatch.setattr(Workspace, "create_cluster",
                        lambda self, *a, **kw: sent.append(kw.get("admin_password")) or create_cluster(self, *a, **kw))
    monkeypatch.setattr(sys, "stdin", io.StringIO("Pa55 with spaces \n"))
    assert cli("cluster", "create", *CLUSTER, "-n", "piped", "--target", "0", "-u", "demo",
               "--password-file", "-").code == 0
    answers = iter(["typed-Pa55", "typed-Pa55", "typed-Pa55", "typo"])
    monkeypatch.setattr(getpass, "getpass", lambda prompt="": next(answers))
    monkeypatch.setattr(sys, "stdin", type("Tty", (io.StringIO,), {"isatty": lambda self: True})())
    assert cli("cluster", "create", *CLUSTER, "-n", "typed", "--target", "0", "-u", "demo", "--password").code == 0
    differ = cli("cluster", "create", *CLUSTER, "-n", "typo", "--target", "0", "-u", "demo", "-p")
    assert differ.code == EXIT_USAGE and "differ" in differ.err
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    no_tty = cli("cluster", "create", *CLUSTER, "-n", "typo", "--target", "0", "-u", "demo", "-p")
    assert no_tty.code == EXIT_USAGE and "--password-file" in no_tty.err
    assert sorted(c["name"] for c in cli("cluster", "list", *CLUSTER, "-o", "json").json()) == ["piped", "typed"]
    assert sent == ["Pa55 with spaces ", "typed-Pa55"]  # the line ending dropped, spaces kept


@pytest.mark.parametrize("args, names", [
    (["workspace", "create", "-g", RG, "-n", "bad name!"], ["workspace", "'bad name!'", "valid"]),
    (["workspace", "create", "-g", RG, "-n", WS, "-l", "East US 2!"], ["location", "region"]),
    (["cluster", "create", *CLUSTER, "-n", "c", "--target", "2"], ["--generate-ssh-keys", "--ssh-key-file",
                                                                    "--password-file", "--password"]),
    (["cluster", "create", *CLUSTER, "-n", "c", "--target", "2", "--min", "0", "--max", "2", "--generate-ssh-keys"],
     ["--target", "--min"]),
    (["cluster", "create", *CLUSTER, "-n", "c", "--min", "1", "--generate-ssh-keys"], ["--min", "--max"]),
    (["cluster", "create", *CLUSTER, "-n", "c", "--target", "-1", "--generate-ssh-keys"], ["--target", ">= 0"]),
    (["cluster", "create", *CLUSTER, "-n", "c", "--vm-size", "NC6", "--generate-ssh-keys"], ["vm_size", "Standard_NC6"]),
    (["cluster", "create", *CLUSTER, "-n", "c", "--vm-priority", "spot", "--generate-ssh-keys"], ["--vm-priority"]),
    (["cluster", "create", *CLUSTER, "-n", "c", "--ssh-key-file", "/nonexistent/key.pub"], ["--ssh-key-file"]),
    (["cluster", "resize", *CLUSTER, "-n", "c"], ["--target"]),
    (["cluster", "show", "-g", RG, "-n", "c"], ["--workspace"]),
    (["workspace", "show", "-g", RG, "-n", WS, "--query", "nosuchfield"], ["--query", "location"]),
    (["workspace"], ["VERB"]),
    (["nonsense"], ["invalid choice"]),
])
def test_bad_input_exits_2_with_a_message_and_changes_nothing(cli: Cli, workspace: str, args: list[str],
                                                               names: list[str]) -> None:
    run = cli(*args)
    assert run.code == EXIT_USAGE
    for text in names:
        assert text in run.err
    assert cli("cluster", "list", *CLUSTER, "-o", "json").json() == []
    assert [w["name"] for w in cli("workspace", "list", "-o", "json").json()] == [WS]


def test_help_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    assert "cluster" in capsys.readouterr().out
    assert main(["job", "file", "list", "--help"]) == 0
    assert "--output-directory-id" in capsys.readouterr().out


def test_azure_target_without_subscription_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--target", "azure", "workspace", "list"]) == EXIT_USAGE
    assert "--subscription" in capsys.readouterr().err

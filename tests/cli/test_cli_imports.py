"""A command pays for what its verb needs: parsing the command line (``--help`` included) imports
neither Microsoft's Batch AI client nor the SDK's places, and a parser built for one command line
parses it as the parser of every verb does. Structural checks, in fresh processes: no timing."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import horovod_batchai
from horovod_batchai.cli import build_parser
from horovod_batchai.cli.parser import glue_free_text
from horovod_batchai.cli.run import GROUPS

#: what no command line costs before its verb runs: the clients, the places, the public classes
#: that reach them, and the job.json validator
HEAVY = ("azure.mgmt", "azure.storage", "azure.ai", "msrest", "requests", "jsonschema", "horovod_batchai._places",
         "horovod_batchai._target", "horovod_batchai._workspace", "horovod_batchai._experiment",
         "horovod_batchai._job", "horovod_batchai._cluster", "horovod_batchai._fileshare",
         "horovod_batchai.local.daemon")


def _modules_after(code: str) -> list[str]:
    """The modules a fresh interpreter holds after running ``code`` (this checkout's package first)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(Path(horovod_batchai.__file__).parents[1]), *filter(None, [os.environ.get("PYTHONPATH")])])}
    script = code + "\nimport json, sys\nprint(json.dumps(sorted(sys.modules)), file=sys.__stderr__)"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    return json.loads(done.stderr.strip().splitlines()[-1])


def _heavy(modules: list[str]) -> list[str]:
    return [m for m in modules if m.startswith(HEAVY)]


@pytest.mark.parametrize("argv", [
    ["--help"],
    ["job", "--help"],
    ["job", "show", "--help"],
    ["cluster", "create", "--help"],
    ["job", "show", "-g", "rg"],  # a usage mistake: exit 2 before anything is imported for the verb
])
def test_help_and_usage_mistakes_import_no_client_and_no_place(argv: list[str]) -> None:
    modules = _modules_after(f"from horovod_batchai.cli import main\nmain({argv!r})")
    assert "horovod_batchai.cli.run" in modules  # the check looks at a process that ran the command
    assert _heavy(modules) == []


def test_parsing_a_command_imports_no_client_and_no_place() -> None:
    modules = _modules_after("from horovod_batchai.cli import build_parser\n"
                             "words = 'job show -g rg -w ws -e exp -n job1'.split()\n"
                             "args = build_parser(words).parse_args(words)\n"
                             "assert args.func.__name__ == 'job_show'")
    assert "horovod_batchai.cli.job" in modules
    assert _heavy(modules) == []


def test_the_check_sees_a_heavy_import() -> None:
    """Not vacuous: a process that builds a target holds the places and the public classes."""
    modules = _modules_after("from horovod_batchai import Target")
    assert {"horovod_batchai._target", "horovod_batchai._places"} <= set(_heavy(modules))


COMMAND_LINES = [
    "job show -g rg -w ws -e exp -n job1",
    "--target local -o json job show -g rg -w ws -e exp -n job1 --query executionState",
    "job create -g rg -w ws -e exp -n j -c c1 -f job.json --append-args --epochs=3 --node-count 2",
    "job file download -g rg -w ws -e exp -j j --path stdout.txt --dest out/",
    "cluster create -g rg -w ws -n c1 --vm-size Standard_NC6 --target 2 --generate-ssh-keys --wait",
    "cluster resize -g rg -w ws -n c1 --min 0 --max 4",
    "workspace list",
    "experiment create -g rg -w ws -n exp",
    "sweep create -g rg -w ws -e exp -n s -c c1 -f job.json -p lr=0.1,0.2 -p bs=uniform:1:2 --sampling random "
    "--num-trials 3",
    "share create -g rg --account-name acc --share-name myshare --quota 5",
    "directory create -g rg --account-name acc --share-name myshare --path cifar",
    "file upload -g rg --account-name acc --share-name myshare --source x.py --path cifar",
    "local start --node-runtime /usr/bin/python3",
    "--state-dir /tmp/x local status",
    "--query file job show -g rg -w ws -e exp -n job",  # a group's name as another option's value
]


@pytest.mark.parametrize("line", COMMAND_LINES)
def test_a_parser_built_for_a_command_line_parses_it_as_the_whole_parser_does(line: str) -> None:
    words = glue_free_text(line.split())
    whole, narrow = vars(build_parser().parse_args(words)), vars(build_parser(words).parse_args(words))
    assert narrow == whole
    assert callable(narrow["func"])


def test_every_group_is_offered_and_the_narrow_parser_builds_only_the_named_ones() -> None:
    def verbs(parser: object, group: str) -> list[str]:
        groups = next(a for a in parser._actions if a.dest == "group")  # type: ignore[attr-defined]
        sub = groups.choices[group]
        actions = [a for a in sub._actions if a.dest == "verb"]
        return sorted(actions[0].choices) if actions else []

    whole, narrow = build_parser(), build_parser(["job", "show"])
    for name, _, _ in GROUPS:
        assert verbs(whole, name), name  # every group has verbs in the whole parser ...
        assert verbs(narrow, name) == (verbs(whole, name) if name == "job" else []), name  # ... one here

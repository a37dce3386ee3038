"""Starts one Horovod rank with the job's secrets in its environment, not on a command line.

horovodrun's Gloo launcher starts each rank as ``/bin/sh -c 'env <every variable it has> <command>'``,
so whatever horovodrun's environment holds ends up in ``/proc/<pid>/cmdline``, which every user of
the machine can read. The service therefore starts horovodrun without the job's secrets, and the
rank's command is this file::

    python rank_exec.py <secrets file> -- <program> [<argument> ...]

It reads the secrets file (JSON ``{name: value}``, mode 0600, in the run's private directory),
adds them to its environment and replaces itself with the program: the values travel through a
file only its owner can read and then live in the rank's environment, never in an argv.

It runs as a file, not as a module of the package, so that starting a rank imports nothing
(stdlib only).
"""
from __future__ import annotations

import json
import os
import sys

__all__ = ["main"]


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[2] != "--":
        print("usage: rank_exec.py <secrets file> -- <program> [<argument> ...]", file=sys.stderr)
        return 2
    try:
        with open(argv[1], encoding="utf-8") as fh:
            secrets = json.load(fh)
    except (OSError, ValueError) as exc:
        print(f"rank_exec.py: cannot read the job's secrets file: {exc}", file=sys.stderr)
        return 127
    env = dict(os.environ)
    env.update({str(k): str(v) for k, v in secrets.items()})
    try:
        os.execvpe(argv[3], argv[3:], env)
    except OSError as exc:
        print(f"rank_exec.py: cannot run {argv[3]!r}: {exc.strerror}", file=sys.stderr)
        return 127
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main(sys.argv))

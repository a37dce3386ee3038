"""What a node's processes start from: a clean environment, never the service's.

Whoever started the service may have anything in its environment (``AZURE_CLIENT_SECRET``, tokens,
proxies), and a job must see none of it, as a Batch AI node never saw its client's. A job's
processes get this base, then the ``AZ_BATCHAI_*`` variables, the job's ``environmentVariables``
and its ``secrets`` (``job_plan.py``):

- ``PATH``: the system directories; the plan puts the directory of the node runtime's
  interpreter (``node_runtime.py``; e.g. its virtualenv's ``bin``) first.
- ``HOME``, ``USER``, ``LOGNAME``: the user the service runs as (``HOME`` as the service has it,
  so that ``~/.keras`` and the like are where the user keeps them).
- ``LANG``: ``C.UTF-8``, so Python and the shell read and write UTF-8 whatever the service's locale.
- ``PYTHONUNBUFFERED=1``: lines reach ``stdout.txt`` as they are printed.
- ``LD_LIBRARY_PATH``, when the service has it: it says where this machine's shared libraries
  (CUDA's, for one) are, which a node's image said on Batch AI.
- ``PYTHONPATH``, when the service has it and jobs run on the service's own interpreter (no node
  runtime was set): jobs then import what the service imports. A node runtime of its own is a
  Python environment, maybe of another Python version, whose packages are its own: the service's
  ``PYTHONPATH`` (packages built for the service's Python) would break it, so it is left out.

``TMPDIR`` is the node's ``$AZ_BATCHAI_JOB_TEMP`` (set by the plan), so temporary files go
with the job.
"""
from __future__ import annotations

import os
import pwd
from typing import Mapping

__all__ = ["SYSTEM_PATH", "CARRIED_OVER", "base_environment"]

SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#: variables taken from the service's environment (see the module docstring); nothing else is.
CARRIED_OVER = ("PYTHONPATH", "LD_LIBRARY_PATH")


def base_environment(source: Mapping[str, str] = os.environ, *, carry_python_path: bool = True) -> dict[str, str]:
    """The environment every process of a job or setup task starts from; ``carry_python_path`` is
    False when jobs run on a node runtime other than the service's own interpreter."""
    try:
        user = pwd.getpwuid(os.getuid())
        name, home = user.pw_name, user.pw_dir
    except KeyError:  # a uid without a passwd entry (some containers)
        name, home = str(os.getuid()), "/"
    env = {"PATH": SYSTEM_PATH, "HOME": source.get("HOME") or home, "USER": name, "LOGNAME": name,
           "LANG": "C.UTF-8", "PYTHONUNBUFFERED": "1"}
    env.update({key: source[key] for key in CARRIED_OVER
                if source.get(key) and (carry_python_path or key != "PYTHONPATH")})
    return env

"""Running `az` from the Azure CLI test virtualenv against a local service, as a shell does after
`eval "$(horovod-batchai local az-env)"`."""
from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Mapping

from client_venvs import REPO

__all__ = ["az_env", "run", "checked"]


def run(command: str, env: Mapping[str, str], cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    argv = shlex.split(command)
    return subprocess.run(argv, env=dict(env), cwd=cwd, capture_output=True, text=True, timeout=timeout)


def az_env(state_dir: Path, home: Path, venv: Path, storage_account: str = "mystorageaccount") -> dict[str, str]:
    """The environment a shell has after `eval "$(horovod-batchai local az-env --storage-account
    <storage_account>)"` (which also registers the cloud and logs in)."""
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("AZURE_", "IDENTITY_", "MSI_", "REQUESTS_CA_BUNDLE", "HOROVOD_BATCHAI_"))}
    base.update(HOME=str(home), PATH=f"{venv / 'bin'}{os.pathsep}{base.get('PATH', '')}", PYTHONPATH=str(REPO),
                HOROVOD_BATCHAI_STATE_DIR=str(state_dir))
    script = (f'set -e; eval "$({shlex.quote(sys.executable)} -m horovod_batchai.cli local az-env '
              f'--storage-account {shlex.quote(storage_account)})"; '
              f'{shlex.quote(sys.executable)} -c "import json, os; print(json.dumps(dict(os.environ)))"')
    result = subprocess.run(["bash", "-c", script], env=base, cwd=home, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"az-env's lines failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    env: dict[str, str] = json.loads(result.stdout.strip().splitlines()[-1])
    return env


def checked(command: str, env: Mapping[str, str], cwd: Path) -> str:
    """The command's stdout; it must exit 0."""
    result = run(command, env, cwd)
    assert result.returncode == 0, f"{command}\nexit {result.returncode}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result.stdout

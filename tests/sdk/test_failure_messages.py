"""A failed job's error leads with its cause: what the script itself said, that it was
terminated (and by whom), or that it never ran -- horovodrun's launcher traceback left out of the
message (``stderr_tail`` keeps every line). No service: the stderr texts are those local jobs write."""
from __future__ import annotations

from typing import Optional

import pytest

from horovod_batchai import JobFailedError, ServiceErrorDetail


LAUNCHER_TRACEBACK = """\
Traceback (most recent call last):
  File "/x/horovod_batchai/local/runner/horovodrun.py", line 66, in <module>
    main()
  File "/x/site-packages/horovod/runner/gloo_run.py", line 284, in launch_gloo
    raise RuntimeError('Horovod detected that one or more processes exited with non-zero '
RuntimeError: Horovod detected that one or more processes exited with non-zero status, thus causing the job to \
be terminated. The first process to do so was:
Process name: 0
Exit code: 2"""


@pytest.mark.parametrize("exit_code, errors, tail, first", [
    (1, [], "usage: train.py [-h] [--dir DIR]\ntrain.py: error: unrecognized arguments: --learning-rate 0.001\n"
     + LAUNCHER_TRACEBACK,
     "job 'trial-3' failed with exit code 1 (a process exited with 2): "
     "train.py: error: unrecognized arguments: --learning-rate 0.001"),
    (1, [ServiceErrorDetail("JobTerminated", "The job was terminated by the user.")], "",
     "job 'trial-3' was terminated: The job was terminated by the user."),
    (None, [ServiceErrorDetail("JobPreparationFailed", "The job preparation command exited with code 127.")], "",
     "job 'trial-3' never ran its command: JobPreparationFailed: The job preparation command exited with code 127."),
    (None, [], "", "job 'trial-3' never ran its command: the service gave no reason"),
    (4, [], "some output\nno error line here", "job 'trial-3' failed with exit code 4"),
])
def test_a_failure_leads_with_its_cause(exit_code: Optional[int], errors: list, tail: str, first: str) -> None:
    error = JobFailedError("trial-3", exit_code=exit_code, errors=errors, stderr_tail=tail)
    assert str(error).splitlines()[0] == first
    assert "Horovod detected" not in str(error) and error.stderr_tail == tail  # the tail is kept whole

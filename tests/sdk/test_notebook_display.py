"""What a notebook shows: statuses as escaped HTML tables, and which progress bar is chosen."""
from __future__ import annotations

import sys
import types
from datetime import datetime, timezone

import pytest

from horovod_batchai import AllocationState, ClusterStatus, ExecutionState, JobStatus, NodeStateCounts
from horovod_batchai._models.errors import ServiceErrorDetail
from horovod_batchai._shared.progress import Progress, _bar_class


def test_a_cluster_status_is_its_table_in_html_with_service_text_escaped() -> None:
    status = ClusterStatus(name="nc6<cluster>", resource_group="rg", workspace="ws", vm_size="Standard_NC6",
                           allocation_state=AllocationState.STEADY, current_node_count=2,
                           node_state_counts=NodeStateCounts(idle=1, running=1), target_node_count=2,
                           auto_scale=None, provisioning_state="succeeded",
                           errors=(ServiceErrorDetail("DiskFull", "no <space> left"),))
    html = status._repr_html_()
    headers = [line.split()[0] for line in status.table().splitlines()[:1]]
    assert html.startswith("<table>") and f">{headers[0]}</th>" in html
    assert ">nc6&lt;cluster&gt;</td>" in html and "<cluster>" not in html
    assert ">STANDARD_NC6</td>" in html and ">steady</td>" in html
    assert '<td style="text-align:right">1</td>' in html
    assert "<li><code>DiskFull</code>: no &lt;space&gt; left</li>" in html


def test_a_job_status_shows_state_exit_code_and_times() -> None:
    started = datetime(2026, 11, 23, 10, 0, 5, tzinfo=timezone.utc)
    html = JobStatus(name="cifar", execution_state=ExecutionState.FAILED, exit_code=3, start_time=started,
                     errors=(ServiceErrorDetail("JobFailed", "exit code 3"),))._repr_html_()
    assert ">cifar</td>" in html and ">failed</td>" in html and ">3</td>" in html
    assert ">2026-11-23T10:00:05+00:00</td>" in html and "<li><code>JobFailed</code>" in html
    assert "<ul>" not in JobStatus(name="j", execution_state=ExecutionState.QUEUED)._repr_html_()


def test_outside_a_kernel_the_text_bar_is_used_and_hidden_without_a_terminal() -> None:
    from tqdm import tqdm
    assert _bar_class() == (tqdm, False)
    with Progress(None, 10, "upload") as progress:
        assert progress._bar.disable == (not sys.stderr.isatty())


def test_in_a_kernel_the_notebook_widget_is_used_when_ipywidgets_is_there(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("ipywidgets")
    kernel = types.SimpleNamespace(config={"IPKernelApp": {}})
    monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=lambda: kernel))
    from tqdm.notebook import tqdm as notebook_tqdm
    assert _bar_class() == (notebook_tqdm, True)
    monkeypatch.setitem(sys.modules, "ipywidgets", None)  # not installed: the text bar, still shown
    from tqdm import tqdm
    assert _bar_class() == (tqdm, True)

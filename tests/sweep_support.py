"""What the sync and the aio sweep tests share."""
from __future__ import annotations

__all__ = ["TRIAL", "CLIENT_DRIVEN", "drive_sweeps_from_the_client"]

#: what a test's child process runs first so that the SDK drives sweeps from the client on the local
#: service, as it does on a target whose service holds none (Batch AI on Azure)
CLIENT_DRIVEN = ("from horovod_batchai._places.batchai.operations import BatchAIOperations\n"
                 "BatchAIOperations.holds_sweeps = False\n")


def drive_sweeps_from_the_client(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The same in this process: the local service's Batch AI place reads as holding no sweeps."""
    from horovod_batchai._places.batchai.operations import BatchAIOperations
    monkeypatch.setattr(BatchAIOperations, "holds_sweeps", False)

# lr 0.3 and 0.2 record three epochs and end; lr 0.1 records two worse ones, then runs on
TRIAL = """\
import argparse, os, time
parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float, required=True)
parser.add_argument("--pause", type=float, default=0)
args = parser.parse_args()
with open(os.path.join(os.environ["AZ_BATCHAI_STDOUTERR_DIR"], "metrics.csv"), "w") as fh:
    fh.write("epoch,val_accuracy\\n")
    for epoch in range(3 if args.lr > 0.15 else 2):
        fh.write(f"{epoch},{args.lr}\\n")
        fh.flush()
time.sleep(args.pause if args.lr > 0.15 else 600)
"""

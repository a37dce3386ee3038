"""What the sync and the aio sweep tests share."""
from __future__ import annotations

__all__ = ["TRIAL"]

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

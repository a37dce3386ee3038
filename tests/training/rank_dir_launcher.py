"""Run ``python -m training`` under horovodrun with ``--dir BASE/rank<r>`` for rank r.

    horovodrun -np 2 ... python rank_dir_launcher.py BASE [training options]

Every worker gets its own --dir, so a file written by any rank but 0 lands where a test sees it.
"""
import os
import runpy
import sys

base, options = sys.argv[1], sys.argv[2:]
rank = os.environ["HOROVOD_RANK"]  # set by horovodrun for each worker
sys.argv = ["training", "--dir", os.path.join(base, f"rank{rank}"), *options]
runpy.run_module("training", run_name="__main__", alter_sys=True)

"""Times folding a checkpoint against copying it, in one run.

  measure.py --plan PLAN --out DIR [--rounds 3] SHARD...

Each round copies the shards with cp and folds them with
flashnorm-fold-checkpoint, alternating which goes first; each command's
time includes `sync -f` of the output's file system, so both are measured
to the disk, not to the page cache. The shards are read once before the
first round (both then read them from the page cache); a round's outputs
are deleted after it, then the disk gets --settle seconds. Prints a table of
rounds, then one summary line:

  checkpoint: bytes=B fold_s=T cp_s=T fold_vs_cp=R fold_peak_rss_mb=M
              cp_peak_rss_mb=M

(medians over the rounds; peak RSS is the largest of the rounds, from
wait4's rusage of the command itself).
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument("--plan", required=True)
ap.add_argument("--out", required=True)
ap.add_argument("--rounds", type=int, default=5)
ap.add_argument("--settle", type=float, default=10.0,
                help="seconds to wait after deleting a round's outputs")
ap.add_argument("--tool", default=os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "build", "bin",
    "flashnorm-fold-checkpoint"))
ap.add_argument("shards", nargs="+")
args = ap.parse_args()


def run(cmd):
    """Runs cmd, then syncs the output file system; returns (seconds,
    peak RSS in MB of cmd)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"measure: {' '.join(cmd)} failed")
    subprocess.run(["sync", "-f", args.out], check=True)
    return time.perf_counter() - start, usage.ru_maxrss / 1024.0


total = sum(os.path.getsize(s) for s in args.shards)
os.makedirs(args.out, exist_ok=True)
for s in args.shards:  # Into the page cache, for both.
    with open(s, "rb") as f:
        while f.read(1 << 24):
            pass
fold_t, cp_t, fold_rss, cp_rss = [], [], [], []
print(f"{'round':>5} {'first':>5} {'cp s':>8} {'fold s':>8} {'ratio':>6} "
      f"{'cp MB':>7} {'fold MB':>8}")
out_bytes = 0
for r in range(args.rounds):
    # Both outputs are new files and nothing is deleted between the two
    # commands: on a file system mounted with discard, deleting gigabytes
    # trims the device in the background and slows whatever runs next.
    cp_dir = os.path.join(args.out, f"cp{r}")
    folded = os.path.join(args.out, f"folded{r}.safetensors")
    os.makedirs(cp_dir)
    subprocess.run(["sync", "-f", args.out], check=True)
    order = ["cp", "fold"] if r % 2 == 0 else ["fold", "cp"]
    for what in order:
        if what == "cp":
            t, m = run(["cp"] + args.shards + [cp_dir])
            cp_t.append(t)
            cp_rss.append(m)
        else:
            t, m = run([args.tool, "--plan", args.plan, *args.shards, "-o",
                        folded])
            fold_t.append(t)
            fold_rss.append(m)
    print(f"{r:>5} {order[0]:>5} {cp_t[-1]:8.2f} {fold_t[-1]:8.2f} "
          f"{fold_t[-1] / cp_t[-1]:6.2f} {cp_rss[-1]:7.1f} {fold_rss[-1]:8.1f}",
          flush=True)
    out_bytes = os.path.getsize(folded)
    shutil.rmtree(cp_dir)
    os.remove(folded)
    subprocess.run(["sync", "-f", args.out], check=True)
    time.sleep(args.settle)
f, c = statistics.median(fold_t), statistics.median(cp_t)
print(f"checkpoint: bytes={total} out_bytes={out_bytes} fold_s={f:.2f} "
      f"cp_s={c:.2f} fold_vs_cp={f / c:.2f} "
      f"fold_peak_rss_mb={max(fold_rss):.0f} cp_peak_rss_mb={max(cp_rss):.0f}")

"""Summarises bench_gui's JSON lines (bench/run_gui_bench.sh): cold | stall."""
import json
import statistics
import sys


def verdict(ok):
    return "met" if ok else "MISSED"


def cold(runs):
    total = statistics.median(r["process_to_populated_ms"] for r in runs)
    main = statistics.median(r["main_to_populated_ms"] for r in runs)
    n = runs[0]["checkpoints"]
    print(f"median of {len(runs)}: process start -> populated browser {total:.0f} ms "
          f"(main() -> populated {main:.0f} ms) for {n} checkpoints; goal < 1000 ms: {verdict(total < 1000)}")


def stall(r):
    print(f"statistics + histogram + heat map of {r['tensor']} ({r['tensor_numel']:,} elements): "
          f"{r['stats_ms']:.0f} ms; goal < 500 ms: {verdict(r['stats_ms'] < 500)}")
    worst = max(r["scan_max_stall_ms"], r["select_max_stall_ms"], r["stats_max_stall_ms"])
    print(f"longest GUI-thread stall: scan {r['scan_max_stall_ms']:.1f} ms, showing the checkpoint "
          f"{r['select_max_stall_ms']:.1f} ms, statistics {r['stats_max_stall_ms']:.1f} ms; "
          f"goal < 50 ms: {verdict(worst < 50)}")


def curves(r):
    print(f"{r['points']:,} points: read and plotted in {r['load_ms']:.0f} ms (off the GUI thread), "
          f"one replot {r['replot_ms']:.1f} ms; {r['appended']:,} live points followed in {r['live_ms']:.0f} ms, "
          f"longest GUI-thread stall {r['live_max_stall_ms']:.1f} ms (goal < 50 ms: {verdict(r['live_max_stall_ms'] < 50)})")


if __name__ == "__main__":
    rows = [json.loads(line) for line in sys.stdin if line.strip().startswith("{")]
    if sys.argv[1] == "cold":
        cold(rows)
    elif sys.argv[1] == "curves":
        curves(rows[0])
    else:
        stall(rows[0])

#!/usr/bin/env python3
"""Prints run_bench.sh's table from the two JSON results (stdlib only).

    report.py PYTHON.json CPP.json [--links-note TEXT]

Ratio = Python / ours: how many times faster (or smaller) ours is.
"""
import json
import sys


def fmt_ms(ms):
    if ms is None:
        return "-"
    if ms >= 1000:
        return "%.2f s" % (ms / 1000)
    if ms >= 10:
        return "%.1f ms" % ms
    if ms >= 1:
        return "%.2f ms" % ms
    return "%.3f ms" % ms


def fmt_s(s):
    return "-" if s is None else ("%.3f s" % s if s < 10 else "%.1f s" % s)


def fmt_mb(mb):
    if mb is None:
        return "-"
    return "%.2f GiB" % (mb / 1024) if mb >= 1024 else "%.1f MiB" % mb


def ratio(python, ours):
    if python is None or ours is None or ours <= 0:
        return "-"
    r = python / ours
    return "%.0fx" % r if r >= 100 else ("%.1fx" % r if r >= 1 else "%.2fx" % r)


def verdict(ours, goal):
    if ours is None or goal is None:
        return "-"
    return "PASS" if ours < goal else "FAIL"


def main(argv):
    if len(argv) < 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    with open(argv[1]) as f:
        py = json.load(f)
    with open(argv[2]) as f:
        cpp = json.load(f)

    g = lambda d, *keys: _get(d, keys)
    lazy_ms = g(py, "lazy_in_process", "ms_median")
    lazy_fresh_ms = g(py, "lazy_fresh_process", "ms_median")
    load_s = g(py, "torch_load", "seconds_median")
    load_mb = g(py, "torch_load", "peak_rss_growth_mb_median")
    lazy_dir_s = g(py, "lazy_directory", "s_median")

    ours_ms = g(cpp, "in_process_ms", "median")
    ours_mb = g(cpp, "memory", "rss_growth_mb")
    cli_ms = g(cpp, "cli_info_ms", "median")
    scan_s = g(cpp, "scan_dir_s", "median")
    cli_ls_ms = g(cpp, "cli_ls_ms", "median")
    n_files = g(cpp, "scan_dir_s", "checkpoints")

    rows = [
        # figure, ours, python (what), ratio, goal, verdict
        ("metadata + tensor table, in-process (median of rounds)", fmt_ms(ours_ms), "%s lazy zip+pickle" % fmt_ms(lazy_ms),
         ratio(lazy_ms, ours_ms), "< 0.2 ms", verdict(ours_ms, 0.2)),
        ("  same, against a full torch.load", fmt_ms(ours_ms), "%s torch.load" % fmt_s(load_s),
         ratio(load_s * 1e3 if load_s is not None else None, ours_ms), "", ""),
        ("memory growth, one file kept open (VmRSS)", fmt_mb(ours_mb), "%s torch.load peak" % fmt_mb(load_mb),
         ratio(load_mb, ours_mb), "< 10 MB", verdict(ours_mb, 10.0)),
        ("  same, against the lazy Python read (VmRSS)", fmt_mb(ours_mb),
         "%s lazy, result alive" % fmt_mb(g(py, "lazy_fresh_process", "vmrss_growth_mb")),
         ratio(g(py, "lazy_fresh_process", "vmrss_growth_mb"), ours_mb), "", ""),
        ("fresh `ckptscope-cli info FILE` process", fmt_ms(cli_ms), "%s lazy, fresh python" % fmt_ms(lazy_fresh_ms),
         ratio(lazy_fresh_ms, cli_ms), "< 15 ms", verdict(cli_ms, 15.0)),
        ("`ls` of %s checkpoints, scanDirectory in-process" % (n_files if n_files is not None else "?"),
         fmt_s(scan_s), "%s lazy x%s, one python" % (fmt_s(lazy_dir_s), g(py, "lazy_directory", "files")),
         ratio(lazy_dir_s, scan_s), "< 0.1 s", verdict(scan_s, 0.1)),
        ("  same, fresh `ckptscope-cli ls DIR` process", fmt_s(cli_ls_ms / 1e3 if cli_ls_ms is not None else None),
         "%s lazy x%s, one python" % (fmt_s(lazy_dir_s), g(py, "lazy_directory", "files")),
         ratio(lazy_dir_s * 1e3 if lazy_dir_s is not None else None, cli_ls_ms), "", ""),
    ]
    head = ("figure", "ours", "Python", "ratio", "goal", "pass/fail")
    widths = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head))]
    line = lambda r: "  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip()
    print(line(head))
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print(line(r))

    print()
    print("floors: process spawn (/bin/true) %s; python -c pass %s" % (
        fmt_ms(g(cpp, "spawn_floor_ms", "median")), fmt_ms(g(py, "lazy_fresh_process", "python_startup_ms_median"))))
    print("ours, minimum instead of median: in-process %s, cli info %s, ls %s" % (
        fmt_ms(g(cpp, "in_process_ms", "min")), fmt_ms(g(cpp, "cli_info_ms", "min")), fmt_s(g(cpp, "scan_dir_s", "min"))))
    print("ours, thread CPU time (median; what other load on the cores cannot inflate): in-process %s, ls %s" % (
        fmt_ms(g(cpp, "in_process_cpu_ms", "median")), fmt_s(g(cpp, "scan_dir_cpu_s", "median"))))
    print("python, minimum instead of median: lazy in-process %s, lazy fresh %s, torch.load runs %s" % (
        fmt_ms(g(py, "lazy_in_process", "ms_min")), fmt_ms(g(py, "lazy_fresh_process", "ms_min")),
        g(py, "torch_load", "seconds_all")))
    if len(argv) > 4 and argv[3] == "--links-note":
        print(argv[4])
    failed = [r[0] for r in rows if r[5] == "FAIL"]
    if failed:
        print("missed goals: " + "; ".join(f.strip() for f in failed) + " (breakdown printed by bench_reader above)")
    return 0


def _get(d, keys):
    for k in keys:
        if not isinstance(d, dict) or k not in d:
            return None
        d = d[k]
    return d


if __name__ == "__main__":
    sys.exit(main(sys.argv))

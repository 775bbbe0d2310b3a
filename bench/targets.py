#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The performance targets, each measured now: its absolute figure, its ratio to a reference
measured in this same run (so runs on a busy or a slower machine can be compared), and whether
the target is met.  CPU time (user + system of the process and its children) where the machine
may be loaded; wall time only where the figure is a latency.
    python3 bench/targets.py PFI_BINARY BUILD_DIR
References: the allocator's figures against one pass over the same curves (read_ms, in the
same process); the jobs-file input path against Python's json.load of the same file (a whole
document in memory); the study and the simulator's fit against gzip -6 of that file (a fixed
amount of CPU work); the cluster's acknowledgement against its refresh round (three GETs on
every node) in the same run."""
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jobs_gen  # noqa: E402


def run(cmd, out=subprocess.DEVNULL, check=True):
    """(CPU seconds, peak RSS MB) of cmd (and its children); its output to out, its messages
    shown only when it fails (check: a failure ends the run)."""
    with tempfile.TemporaryFile() as err:
        p = subprocess.Popen(cmd, stdout=out, stderr=err)
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        if p.returncode != 0 and check:
            err.seek(0)
            raise SystemExit("targets: %s exited %d:\n%s" %
                             (" ".join(cmd), p.returncode, err.read().decode()[-2000:]))
    return ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024.0


def output(cmd):
    with tempfile.TemporaryFile() as f:
        cpu, _ = run(cmd, out=f)
        f.seek(0)
        return f.read().decode(), cpu


def line(what, value, unit, ratio, ref, target, met):
    verdict = "-" if met is None else "met" if met else "NOT MET"
    print("%-44s %10.3f %-3s  %8.3f x %-34s target %-14s %s" %
          (what, value, unit, ratio, ref, target, verdict))


def allocator(pfi, jobs, reps):
    text, _ = output([pfi, "bench", "allocate", "--jobs", str(jobs), "--reps", str(reps),
                      "--json"])
    return json.loads(text)


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    pfi, build = os.path.abspath(sys.argv[1]), sys.argv[2]
    tmp = tempfile.mkdtemp(prefix="pfi-targets-")
    jobs_file = os.path.join(tmp, "jobs100k.json")
    jobs_gen.write(100000, jobs_file)
    mb_file = os.path.getsize(jobs_file) / 2**20
    gz_cpu, _ = run(["sh", "-c", "gzip -6 -c \"$0\" >/dev/null", jobs_file])
    print("references: 100k-job file %.1f MB; gzip -6 of it %.2f s CPU" % (mb_file, gz_cpu))

    a = allocator(pfi, 100000, 5)
    read = a["read_ms"]
    ref = "read_ms (%.2f ms)" % read
    line("allocator fresh solve, 100k jobs", a["solve_ms"], "ms", a["solve_ms"] / read, ref,
         "<= 25 ms", a["solve_ms"] <= 25)
    # What the daemons pay (pfi serve, pfi cluster serve: through the keeper, core/alloc_keep.h):
    # a budget change with the list checked against the keeper's copy, and the first change
    # after a plan (rebuild in the workspace's memory), which must not cost more than a fresh
    # one-shot solve (best_ms, what pfi_alloc_solve costs; solve_ms reuses a workspace's buffers).
    v = a["keep_resolve_ms"]
    line("keeper re-solve, budget change, 100k", v, "ms", v / read, ref, "<= 5 ms",
         v is not None and v <= 5)
    v, fresh = a["resolve_first_ms"], a["best_ms"]
    line("first budget change after a plan, 100k", v, "ms", v / fresh,
         "fresh solve (%.2f ms)" % fresh, "<= fresh", v is not None and v <= fresh)
    v = a["resolve_sorting_max_ms"]
    line("slowest change while sorting, 100k", v, "ms", v / fresh,
         "fresh solve (%.2f ms)" % fresh, "<= fresh", v is not None and v <= fresh)
    v = a["resolve_first_new_ms"]
    line("first change, new workspace, 100k", v, "ms", v / fresh,
         "fresh solve (%.2f ms)" % fresh, "none", None)
    for key, what in (("resolve_ms", "warm re-solve, budget change, 100k"),
                      ("resolve_job_ms", "warm re-solve, one job's curve, 100k"),
                      ("resolve_arrive_ms", "warm re-solve, a job arriving, 100k"),
                      ("resolve_leave_ms", "warm re-solve, a job leaving, 100k")):
        v = a[key]
        line(what, v, "ms", v / read, ref, "<= 5 ms", v is not None and v <= 5)
    # Best of 3, as at 100k: read_ms is then the best pass too.  With one rep it was a single
    # pass over freshly made curves, 13-74 ms in three runs against 9.6 ms best of 3, and the
    # ratio it divides looked up to 6 times better than it is.
    b = allocator(pfi, 1000000, 3)
    read = b["read_ms"]
    line("allocator fresh solve, 1M jobs", b["solve_ms"], "ms", b["solve_ms"] / read,
         "read_ms (%.2f ms)" % read, "<= 5 x read", b["solve_ms"] <= 5 * read)

    py_cpu, py_mb = run([sys.executable, "-c",
                         "import json, sys; json.load(open(sys.argv[1]))", jobs_file])
    cpu, mb = run([pfi, "allocate", "--budget", "70%", "--jobs", jobs_file, "--policy",
                   "oracle", "--json"])
    ref = "json.load (%.2f s, %.0f MB)" % (py_cpu, py_mb)
    line("pfi allocate --jobs, 100k jobs: CPU", cpu, "s", cpu / py_cpu, ref, "<= 1 s", cpu <= 1)
    line("pfi allocate --jobs, 100k jobs: peak RSS", mb, "MB", mb / py_mb, ref, "<= 200 MB",
         mb <= 200)

    cpu, _ = run([pfi, "study", "--fleet", "paper", "--out", os.path.join(tmp, "study"),
                  "--no-figures"])
    ref = "gzip -6 (%.2f s)" % gz_cpu
    line("pfi study --fleet paper: CPU", cpu, "s", cpu / gz_cpu, ref, "<= 20 s", cpu <= 20)
    cpu, _ = run([pfi, "sim", "validate"], check=False)  # exits 1 when its fit misses 0.05
    line("pfi sim validate: CPU", cpu, "s", cpu / gz_cpu, ref, "<= 4 s", cpu <= 4)

    text, _ = output([os.path.join(build, "bench", "bench_cluster"), "1000", "8", "5"])
    m = re.search(r"median ([0-9.]+) ms, p95 ([0-9.]+) ms; refresh ([0-9.]+) ms", text)
    if not m:
        raise SystemExit("targets: no summary from bench_cluster:\n" + text)
    med, p95, refresh = (float(x) for x in m.groups())
    ref = "refresh round (%.1f ms)" % refresh
    line("cluster budget change, 1,000 nodes: median", med, "ms", med / refresh, ref,
         "<= 100 ms", med <= 100)
    line("cluster budget change, 1,000 nodes: p95", p95, "ms", p95 / refresh, ref, "none", None)
    print("cluster: the site's cap sum never went over the budget during any change: met")

    text, _ = output([os.path.join(build, "bench", "bench_replan"), "4000", "9"])
    for what, key in (("budget change", "budget"), ("one job's curve", "one job's curve"),
                      ("job leaves/arrives", "a job leaves")):
        m = re.search(r"re-plan after %s.*kept ([0-9.]+) ms, fresh ([0-9.]+) ms" % re.escape(key),
                      text)
        if not m:
            raise SystemExit("targets: no figures from bench_replan:\n" + text)
        kept, fresh = float(m.group(1)), float(m.group(2))
        line("cluster re-plan, %s, 4,000 nodes: CPU" % what, kept, "ms", kept / fresh,
             "fresh plan (%.2f ms)" % fresh, "none", None)
    m = re.search(r"node re-plan .*kept ([0-9.]+) us, fresh ([0-9.]+) us", text)
    if not m:
        raise SystemExit("targets: no node figures from bench_replan:\n" + text)
    kept, fresh = float(m.group(1)), float(m.group(2))
    line("node re-plan (pfi serve), 64 GPUs: CPU", kept, "us", kept / fresh,
         "fresh plan (%.1f us)" % fresh, "none", None)
    if "fresh plan's cap: yes" not in text:
        raise SystemExit("targets: kept and fresh cluster plans differ:\n" + text)
    print("cluster: kept plans gave every GPU the fresh plan's cap: met")
    load = os.getloadavg()
    print("machine: %d CPUs, load average %.1f %.1f %.1f at the end" %
          (os.cpu_count(), load[0], load[1], load[2]))
    subprocess.run(["rm", "-rf", tmp])


if __name__ == "__main__":
    main()

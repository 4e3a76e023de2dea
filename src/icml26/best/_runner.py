"""Child process of the BEST harness: run one candidate on one test case.

Run as ``python -I -S _runner.py`` with a JSON job on stdin. Standard library only, so
that a fresh interpreter starts in a few tens of milliseconds. The job holds

``code``            the candidate's source (must define ``class Solution`` with ``solve``),
``kwargs``          the test input as a JSON string (parsed once per run, outside the timing),
``hard_cpu_s``      CPU seconds after which SIGPROF kills the process (ITIMER_PROF),
``address_space_mb`` RLIMIT_AS for the whole process (a memory bomb gets MemoryError),
``repeats``         timed runs; the minimum CPU time is reported,
``measure_memory``  whether to run once more under ``tracemalloc`` for the peak.

One line ``@@BEST@@{json}`` on stdout carries the result; anything the candidate prints
goes to /dev/null. Time is ``time.process_time`` (user + system CPU of this process,
the quantity the authors read with ``getrusage``) around ``solve`` only; memory is the
``tracemalloc`` peak of that call (Python allocations) and, as the authors' measure,
the minor page faults of the timed call times the page size.
"""

import gc
import json
import math
import os
import resource
import signal
import sys
import time
import tracemalloc

MARK = "@@BEST@@"


def _emit(out, **fields):
    out.write(MARK + json.dumps(fields) + "\n")
    out.flush()


def main():
    real_out = sys.stdout
    job = json.loads(sys.stdin.read())
    hard = float(job["hard_cpu_s"])
    if job.get("address_space_mb"):
        cap = int(job["address_space_mb"]) * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    # Backstop in whole seconds (the authors' RLIMIT_CPU); ITIMER_PROF below is the real limit.
    secs = int(math.ceil(hard * (int(job.get("repeats", 1)) + (3 if job.get("measure_memory", False) else 0)))) + 2
    resource.setrlimit(resource.RLIMIT_CPU, (secs, secs + 1))
    sys.stdout = open(os.devnull, "w")
    sys.setrecursionlimit(10000)
    try:
        namespace = {"__name__": "candidate"}
        exec(compile(job["code"], "<candidate>", "exec"), namespace)
        solution_cls = namespace["Solution"]
        solve = solution_cls().solve
    except BaseException as exc:  # noqa: BLE001 - any failure to load is a compile error
        _emit(real_out, status="CE", detail=f"{type(exc).__name__}: {exc}"[:300])
        return
    page_kb = resource.getpagesize() / 1024.0
    best_cpu, output, minflt_kb = math.inf, None, None
    for _ in range(max(1, int(job.get("repeats", 1)))):
        kwargs = json.loads(job["kwargs"])
        gc.collect()
        signal.setitimer(signal.ITIMER_PROF, hard)  # default action of SIGPROF: terminate
        f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        t0 = time.process_time()
        try:
            output = solve(**kwargs)
        except MemoryError:
            signal.setitimer(signal.ITIMER_PROF, 0)
            _emit(real_out, status="MLE", detail="MemoryError at the address-space cap")
            return
        except BaseException as exc:  # noqa: BLE001
            signal.setitimer(signal.ITIMER_PROF, 0)
            _emit(real_out, status="RE", detail=f"{type(exc).__name__}: {exc}"[:300])
            return
        t1 = time.process_time()
        f1 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        signal.setitimer(signal.ITIMER_PROF, 0)
        best_cpu = min(best_cpu, t1 - t0)
        if minflt_kb is None:  # later runs reuse pages the first one touched
            minflt_kb = (f1 - f0) * page_kb
        del kwargs
    peak_kb = None
    if job.get("measure_memory", False):
        kwargs = json.loads(job["kwargs"])
        gc.collect()
        tracemalloc.start()
        signal.setitimer(signal.ITIMER_PROF, 3 * hard)  # tracing slows allocation-heavy code
        try:
            solve(**kwargs)
        except MemoryError:
            signal.setitimer(signal.ITIMER_PROF, 0)
            _emit(real_out, status="MLE", detail="MemoryError at the address-space cap (traced run)")
            return
        except BaseException as exc:  # noqa: BLE001
            signal.setitimer(signal.ITIMER_PROF, 0)
            _emit(real_out, status="RE", detail=f"{type(exc).__name__}: {exc}"[:300])
            return
        signal.setitimer(signal.ITIMER_PROF, 0)
        peak_kb = tracemalloc.get_traced_memory()[1] / 1024.0
        tracemalloc.stop()
    try:
        json.dumps(output)
    except (TypeError, ValueError):
        output = repr(output)
    _emit(real_out, status="OK", output=output, cpu_ms=1000.0 * best_cpu, peak_kb=peak_kb, minflt_kb=minflt_kb)


if __name__ == "__main__":
    main()

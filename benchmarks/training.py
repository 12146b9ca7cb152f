"""Speed of the training kernels: the batched block (all trials of a block trained as one array
program) against the naive loop that trains one run at a time (tests/oracles/training.py: the
literal formulas, numpy's float64 samplers), and the time of default-sweep-sized blocks.

    PYTHONPATH=src python -m benchmarks.training [--quick] [--sweep]

Both sides are timed end to end per run (data, initialisation, training, evaluations), on the same
parameters, with BLAS pinned to one thread. "1 thread": one block (or naive runs one after the
other) in this thread, timed in CPU seconds of the thread (the machine is shared: wall time would
measure the other users). "2 threads": a ThreadPoolExecutor runs two blocks at once (the way the
driver shares blocks out), against two threads each running naive runs, timed in wall seconds (so
they suffer from any other load; the load average is printed). Rates are run-steps per
second (a run-step = one optimiser step of one run, including its share of the evaluations); the
best of `repeats` timings is kept, since the machine is shared.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from attnsim.jobs.tuning import tune_allocator
from attnsim.kinds.contrastive_training import kernel as ct
from attnsim.kinds.recall_training import kernel as rt

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the oracles
from oracles.training import contrastive_naive_run, recall_naive_run

RECALL = {"n": 64, "d": 32, "batch": 32, "scale": 1.0, "optimiser": "adam", "lr": 0.01}
RECALL_SMALL = RECALL | {"n": 16, "d": 16}  # the default sweep's size
CONTRASTIVE = {
    "n": 64,
    "classes": 8,
    "latent_dim": 8,
    "input_dim": 64,
    "embed_dim": 16,
    "tau": 0.1,
    "optimiser": "adam",
    "lr": 0.01,
}
CASES = {
    "recall": (rt, RECALL, recall_naive_run),
    "recall, default-sweep size": (rt, RECALL_SMALL, recall_naive_run),
    "contrastive": (ct, CONTRASTIVE, contrastive_naive_run),
    "contrastive, instance positives, learnt tau": (
        ct,
        CONTRASTIVE | {"positives": "instance", "instance_noise": 1.0, "tau_mode": "learned"},
        contrastive_naive_run,
    ),
}


def best(fn, repeats: int, cpu: bool = False) -> float:
    """Best of `repeats` timings: CPU time of this thread with `cpu` (immune to other processes on a
    shared machine; right for 1-thread work, BLAS being pinned to this thread), else wall time."""
    clock = time.thread_time if cpu else time.perf_counter
    times = []
    for _ in range(repeats):
        start = clock()
        fn()
        times.append(clock() - start)
    return min(times)


def batched_rate(
    module, params: dict, trials: int, steps: int, threads: int, repeats: int, points: int = 1
) -> float:
    """Run-steps per second of `threads` blocks of `trials` trials run concurrently."""
    pts = [params | {"steps": steps, "lr": params["lr"] * (1 + 0.1 * i)} for i in range(points)]

    def block(seed):
        module.simulate_block(np.random.default_rng(seed), trials, pts)

    def run():
        if threads == 1:
            block(0)
        else:
            with ThreadPoolExecutor(threads) as pool:
                list(pool.map(block, range(threads)))

    return threads * trials * steps * points / best(run, repeats, cpu=threads == 1)


def naive_rate(naive, params: dict, runs: int, steps: int, threads: int, repeats: int) -> float:
    p = params | {"steps": steps}

    def some(seed):
        rng = np.random.default_rng(seed)
        for _ in range(runs):
            naive(rng, p)

    def run():
        if threads == 1:
            some(0)
        else:
            with ThreadPoolExecutor(threads) as pool:
                list(pool.map(some, range(threads)))

    return threads * runs * steps / best(run, repeats, cpu=threads == 1)


def table_rows(quick: bool = False) -> list:
    """Rows of `python -m benchmarks`: per case, the batched kernel and the naive loop on 1 thread
    (CPU run-steps per second, 64-trial blocks) and the speed-up, whose target is 10x. Quick mode
    (values not compared): 2-step runs, one of each, timed once."""
    from benchmarks.table import Row

    steps, runs, repeats, trials = (2, 1, 1, 8) if quick else (40, 3, 3, 64)
    rows = []
    with threadpool_limits(limits=1):
        for name, (module, params, naive) in CASES.items():
            size = ", ".join(
                f"{k}={params[k]}"
                for k in ("n", "d", "batch", "input_dim", "embed_dim", "classes")
                if k in params
            )
            fast = batched_rate(module, params, trials, steps, 1, repeats)
            slow = naive_rate(naive, params, runs, steps, 1, repeats)
            note = (
                f"{size}; {steps} steps per run, {trials}-trial blocks; 1 thread, CPU time, "
                f"best of {repeats}"
            )
            rows.append(Row(f"training {name}: kernel", fast, "run-steps/s", note=note))
            rows.append(
                Row(
                    f"training {name}: naive loop",
                    slow,
                    "run-steps/s",
                    note="one run at a time (tests/oracles/training.py), 1 thread",
                )
            )
            rows.append(
                Row(
                    f"training {name}: speedup over naive",
                    fast / slow,
                    "x",
                    ">= 10",
                    note="batched kernel / naive loop",
                )
            )
        rows += plateau_rows(quick)
    return rows


# The plateau map's one-hot points (workflow/presets/plateau.yaml): runs that never reach the
# threshold, so they train for their whole budget; one block of the map's 16 trials per point.
PLATEAU = [
    RECALL_SMALL | {"scale": scale, "optimiser": o, "lr": lr, "values": v, "stop": "threshold"}
    for scale in (40.0, 100.0)
    for o, lr in (("sgd", 4.0), ("adam", 0.03), ("normgd", 0.3))
    for v in ("trainable", "identity")
]


def plateau_rows(quick: bool = False) -> list:
    """CPU seconds per 10^4-step run of the plateau map (one-hot starts: runs that use their whole
    budget, the map's dominant cost), from a block of 16 trials x 12 points over `steps` steps
    scaled to 10^4 (the cost per step is constant for a run that does not stop); and the batched
    kernel against the naive loop on one of those points, per run-step."""
    from benchmarks.table import Row

    steps, repeats = (5, 1) if quick else (1000, 2)
    pts = [p | {"steps": steps} for p in PLATEAU]

    def block():
        rt.simulate_block(np.random.default_rng(0), 16, pts)

    per_run = best(block, repeats, cpu=True) / (16 * len(pts)) * (10_000 / steps)
    note = (
        f"n=16, d=16, batch=32; {len(pts)} one-hot points x 16 trials (sgd/adam/normgd, W_v "
        f"trained/I, scale 40 and 100), {steps} steps scaled to 10^4; 1 thread, CPU time"
    )
    rows = [
        Row(
            "plateau map: CPU per 10^4-step run (one-hot start, whole budget)",
            per_run,
            "s",
            note=note,
        )
    ]
    one = [pts[2]]  # adam, W_v trained, scale 40
    fast = batched_rate(rt, one[0] | {"steps": steps}, 16, steps, 1, repeats)
    slow_steps = max(5, steps // 10)
    slow = naive_rate(recall_naive_run, one[0], 1, slow_steps, 1, 1)
    rows.append(
        Row(
            "plateau map: kernel, one point (adam, scale 40)",
            fast,
            "run-steps/s",
            note=f"16-trial block, {steps} steps, stop at the threshold (none reached)",
        )
    )
    rows.append(
        Row(
            "plateau map: naive loop, same point",
            slow,
            "run-steps/s",
            note=f"one run at a time (tests/oracles/training.py), {slow_steps} steps",
        )
    )
    rows.append(
        Row(
            "plateau map: speedup over naive",
            fast / slow,
            "x",
            ">= 10",
            note="batched kernel / naive loop, one point per block (the map shares blocks across "
            "22 points)",
        )
    )
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="small sizes, one repeat: checks the script runs"
    )
    parser.add_argument(
        "--sweep", action="store_true", help="also time default-sweep-sized blocks (a few minutes)"
    )
    parser.add_argument(
        "--trials", type=int, default=64, help="trials per batched block (default 64)"
    )
    args = parser.parse_args(argv)
    tune_allocator()
    steps, runs, repeats = (5, 1, 1) if args.quick else (40, 3, 3)
    print(
        f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} (shared: figures "
        f"are best of {repeats})"
    )
    with threadpool_limits(limits=1):
        for name, (module, params, naive) in CASES.items():
            size = ", ".join(
                f"{k}={params[k]}"
                for k in ("n", "d", "batch", "input_dim", "embed_dim", "classes")
                if k in params
            )
            print(f"\n{name} ({size}; {steps} steps per run, {args.trials} trials per block)")
            fast_1 = None
            for threads in (1, 2):
                fast = batched_rate(module, params, args.trials, steps, threads, repeats)
                fast_1 = fast_1 or fast
                slow = naive_rate(naive, params, runs, steps, threads, repeats)
                print(
                    f"  {threads} thread(s): batched {fast:10.0f} run-steps/s   naive {slow:8.0f} "
                    f"run-steps/s   speed-up {fast / slow:6.1f}x"
                )
            single = batched_rate(module, params, 1, steps, 1, repeats)
            print(
                f"  the kernel one run at a time (1-trial blocks), 1 thread: {single:8.0f} "
                f"run-steps/s; batching alone gains {fast_1 / single:5.1f}x"
            )
            if not args.quick:
                for trials in (8, 32, 128):
                    rate = batched_rate(module, params, trials, steps, 1, repeats)
                    print(f"  block of {trials:4d} trials, 1 thread: {rate:10.0f} run-steps/s")
        if args.sweep:
            sweep()
    return 0


def sweep() -> None:
    """Default-sweep-sized work on 1 thread: 200 runs x 300 steps of one point, and a block of 8
    points."""
    print("\ndefault-sweep-sized blocks, 1 thread, CPU seconds (200 trials, 300 steps)")
    recall = {"n": 16, "d": 16, "batch": 32, "steps": 300, "scale": 1.0}
    clock = time.thread_time  # CPU seconds of this thread (BLAS pinned to it)
    for points in (
        [recall | {"optimiser": "adam", "lr": 0.01}],
        [
            recall | {"optimiser": o, "lr": lr, "scale": s}
            for o, lr in (("adam", 0.01), ("sgd", 1.0))
            for s in (0.3, 1.0, 3.0, 10.0)
        ],
    ):
        start = clock()
        rt.simulate_block(np.random.default_rng(0), 200, points)
        took = clock() - start
        print(
            f"  recall n=16 d=16 batch=32, {len(points)} point(s): {took:6.1f} s "
            f"({took / len(points):5.1f} s per point)"
        )
    contrastive = {"n": 64, "steps": 300, "optimiser": "adam", "lr": 0.01}
    for points in (
        [contrastive | {"tau": 0.1}],
        [contrastive | {"tau": t} for t in (0.05, 0.1, 0.2, 0.5, 1.0)],
    ):
        start = clock()
        ct.simulate_block(np.random.default_rng(0), 200, points)
        took = clock() - start
        print(
            f"  contrastive n=64 D=64 d_out=16 C=8, {len(points)} point(s): {took:6.1f} s "
            f"({took / len(points):5.1f} s per point)"
        )


if __name__ == "__main__":
    raise SystemExit(main())

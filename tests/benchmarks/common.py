"""Helpers shared by benchmarks: medians, interleaved timing, and resident-memory sampling."""

import statistics
import threading
import time
from typing import Callable


def timed(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def interleaved(a: Callable[[], object], b: Callable[[], object], rounds: int) -> tuple[float, float]:
    """Median seconds of a and of b, alternating them so that machine noise hits both alike."""
    ta, tb = [], []
    for _ in range(rounds):
        ta.append(timed(a))
        tb.append(timed(b))
    return statistics.median(ta), statistics.median(tb)


def _proc_kib(path: str, field: str) -> int:
    """A "Field: N kB" line of a /proc file, in bytes; 0 when the process is gone."""
    try:
        with open(path) as fh:
            for line in fh:
                if line.startswith(field):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def rss_bytes(pid: int) -> int:
    return _proc_kib(f"/proc/{pid}/status", "VmRSS:")


def pss_bytes(pid: int) -> int:
    """Proportional set size: pages shared after fork are split between the processes sharing
    them, so summing it over a process tree does not count them twice."""
    return _proc_kib(f"/proc/{pid}/smaps_rollup", "Pss:")


class PeakMemory:
    """Samples the resident memory of a set of processes (found again each time) every 5 ms:
    their sum, or with `combine=max` the largest one's."""

    def __init__(self, pids: Callable[[], list[int]], measure: Callable[[int], int] = rss_bytes,
                 combine: Callable[[list[int]], int] = sum):
        self._pids = pids
        self._measure = measure
        self._combine = combine
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, self._combine([self._measure(pid) for pid in self._pids()] or [0]))
            time.sleep(0.005)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def line(label: str, value: str) -> None:
    print(f"   {label:<58} {value}", flush=True)


def chunked_stream(block: bytes, big: bytes, total: int, big_lines: int, chunk: int = 1 << 20):
    """A synthetic stream of `total` bytes in `chunk`-sized pieces, without holding it: `block`
    repeated, with `big` (one long line) `big_lines` times evenly among it."""
    every = total // (big_lines + 1)
    sent, next_big = 0, every
    while sent < total:
        if sent >= next_big:
            next_big += every
            for start in range(0, len(big), chunk):
                yield big[start:start + chunk]
            sent += len(big)
            continue
        for start in range(0, len(block), chunk):
            yield block[start:start + chunk]
        sent += len(block)

"""Benchmark runner: imports tests/benchmarks/bench_*.py and calls each module's `main()`.

Every benchmark prints its own baseline and the ratio against it, measured in this process.
Never used by the test suite: these numbers are for notes, not assertions.
"""

import importlib
import pkgutil
import sys
import time

import tests.benchmarks as package


def main(argv: list[str]) -> int:
    wanted = set(argv)
    names = sorted(m.name for m in pkgutil.iter_modules(package.__path__) if m.name.startswith("bench_"))
    for name in names:
        short = name[len("bench_"):]
        if wanted and short not in wanted:
            continue
        print(f"== {short}", flush=True)
        started = time.perf_counter()
        importlib.import_module(f"tests.benchmarks.{name}").main()
        print(f"   ({time.perf_counter() - started:.1f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

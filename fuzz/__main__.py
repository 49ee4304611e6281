"""Fuzz runner: each fuzz/fuzz_*.py module exposes `HARNESSES`, a list of hypothesis-decorated
test functions. They run here with a time budget split between them and many more examples
than in the test suite. A failure prints the falsifying example and exits 1."""

import argparse
import importlib
import pkgutil
import sys
import time

from hypothesis import HealthCheck, settings

import fuzz as package

ROUND_EXAMPLES = 100   # small rounds, so a harness stops close to its share of the time


def main() -> int:
    parser = argparse.ArgumentParser(prog="bin/fuzz")
    parser.add_argument("--seconds", type=float, default=300.0, help="total time budget")
    parser.add_argument("names", nargs="*", help="harness modules to run (default: all)")
    options = parser.parse_args()
    modules = sorted(m.name for m in pkgutil.iter_modules(package.__path__) if m.name.startswith("fuzz_"))
    modules = [m for m in modules if not options.names or m[len("fuzz_"):] in options.names]
    harnesses = [h for m in modules for h in importlib.import_module(f"fuzz.{m}").HARNESSES]
    if not harnesses:
        print("fuzz: no harnesses found")
        return 0
    share = options.seconds / len(harnesses)
    failed = 0
    for harness in harnesses:
        name = f"{harness.__module__}.{harness.__name__}"
        started, runs = time.monotonic(), 0
        configured = settings(max_examples=ROUND_EXAMPLES, deadline=None, database=None,
                              suppress_health_check=list(HealthCheck))(harness)
        try:
            while time.monotonic() - started < share:
                configured()
                runs += 1
        except Exception as exc:   # a falsifying example: report it and go on
            failed += 1
            print(f"FAIL {name}: {type(exc).__name__}: {exc}")
            continue
        print(f"ok   {name}: {runs} rounds of up to {ROUND_EXAMPLES} examples in {time.monotonic() - started:.1f} s")
    print(f"fuzz: {len(harnesses) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

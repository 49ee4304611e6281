"""Longer runs of the sandbox policy and Landlock rule properties (see tests/sandbox_properties.py)."""

from hypothesis import given

from tests.sandbox_properties import cases, check_reads, check_rule_kinds, check_writes


@given(cases())
def sandbox_rules_write_exactly_the_writable_roots(case):
    check_writes(case)


@given(cases())
def sandbox_rules_read_everything_but_the_hidden(case):
    check_reads(case)


@given(cases())
def sandbox_rules_fit_the_abi_and_the_file(case):
    check_rule_kinds(case)


HARNESSES = [sandbox_rules_write_exactly_the_writable_roots, sandbox_rules_read_everything_but_the_hidden,
             sandbox_rules_fit_the_abi_and_the_file]

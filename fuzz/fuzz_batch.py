"""Longer runs of the batch and delegation validator properties (see tests/batch_properties.py)."""

from hypothesis import given

from tests.batch_properties import (AGES, LINES, RECORD_BYTES, check_age, check_batch_input, check_output_resume,
                                    check_record_bytes)


@given(LINES)
def batch_input_is_accepted_well_formed_or_refused(lines):
    check_batch_input(lines)


@given(LINES)
def output_resume_keeps_only_completed_results(lines):
    check_output_resume(lines)


@given(AGES)
def ages_are_at_least_an_hour_or_refused(text):
    check_age(text)


@given(RECORD_BYTES)
def records_that_do_not_decode_are_skipped(data):
    check_record_bytes(data)


HARNESSES = [batch_input_is_accepted_well_formed_or_refused, output_resume_keeps_only_completed_results,
             ages_are_at_least_an_hour_or_refused, records_that_do_not_decode_are_skipped]

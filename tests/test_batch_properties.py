"""Short property runs of the batch input, batch output and delegation record validators."""

from hypothesis import given, settings

from tests.batch_properties import (AGES, LINES, RECORD_BYTES, check_age, check_batch_input, check_output_resume,
                                    check_record_bytes)


@settings(max_examples=60, deadline=None)
@given(LINES)
def test_batch_input_is_accepted_well_formed_or_refused(lines):
    check_batch_input(lines)


@settings(max_examples=60, deadline=None)
@given(LINES)
def test_output_resume_keeps_only_completed_results(lines):
    check_output_resume(lines)


@settings(max_examples=100, deadline=None)
@given(AGES)
def test_ages_are_at_least_an_hour_or_refused(text):
    check_age(text)


@settings(max_examples=60, deadline=None)
@given(RECORD_BYTES)
def test_records_that_do_not_decode_are_skipped(data):
    check_record_bytes(data)

"""`scv batch FILE.jsonl`: headless batch delegation, one `agent` call per input line."""

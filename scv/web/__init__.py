"""Hosted web search's citations: the `Sources:` list appended to an answer. The URL and address
validators both sides use live in scv/core/web/, the `[web]` settings in scv/config/web.py."""

"""MCP servers a session uses as tools: the seam (servers.py) and its fake (fake.py)."""

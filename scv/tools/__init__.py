"""Tool specs: the supervisor-side half of each tool (Args, risk, approval summary)."""

"""Model providers: the seam in base.py, OpenAI-compatible wire APIs, and the offline script."""

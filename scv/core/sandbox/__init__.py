"""The OS sandbox's pure half: `policy` decides what a call may touch, `rules` turns that into
Landlock rules, `fsview` is the file system they look at (a seam with a fake). The supervisor picks
a request (scv/sandbox/choose.py); the worker applies it (workers/sandbox_linux.py)."""

"""`python -m scv` (and bin/scv): the process entry."""

from scv.entry import main

main()

"""Delegation tracking on the supervisor side: listing the running delegated agents, the orphan
reconcile at start-up, stopping a run, and garbage collection of old agent transcripts. The
records themselves and the processes they tag are in scv/core/delegations/."""

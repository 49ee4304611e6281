"""Delegation tracking: a record per running delegated agent under
`$SCV_HOME/state/delegations`, the processes tagged with its SCV_PARENT link, stopping a run,
the orphan reconcile, and garbage collection of old agent transcripts."""

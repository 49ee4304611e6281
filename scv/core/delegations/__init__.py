"""A delegation's record under `$SCV_HOME/state/delegations` and the processes tagged with its
`SCV_PARENT` link: written by the worker that runs it, read by the supervisor's listing, reconcile
and garbage collection."""

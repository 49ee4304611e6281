"""What a long-lived SCV process (`scv exec`, `scv server --stdio`, `scv batch`) does first: it
becomes the child subreaper of its delegated agents' leftovers and reconciles orphans that an
earlier SCV process left behind."""

import sys

from scv.config.load import scv_home
from scv.delegations.reconcile import reconcile
from scv.supervision.supervisor import Supervisor


def start_tracking(supervisor: Supervisor) -> None:
    """Call from the main thread, right after the supervisor exists."""
    supervisor.adopt_orphans()
    try:
        done = reconcile(scv_home())
    except OSError as err:      # cleanup must never stop the command from running
        print(f"scv: could not reconcile delegation records ({err.strerror}); run scv agents kill --orphans",
              file=sys.stderr)
        return
    if done.orphans:
        print(f"scv: stopped {len(done.orphans)} orphaned delegation(s): {', '.join(done.orphans)}", file=sys.stderr)

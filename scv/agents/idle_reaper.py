"""Forgets a session's conversations when they have been unused for `agent.conversation_idle_seconds`,
at that time rather than at the session's next call: a live conversation's server (an ACP agent, a
nested SCV) then stops when its time is up, not whenever the model next delegates."""

import threading

from scv.agents.conversations import Conversations

MARGIN_SECONDS = 0.05       # past the due time, so the conversation is strictly over its limit


class IdleReaper:
    def __init__(self, conversations: Conversations):
        self._conversations = conversations
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="scv-idle-reaper", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self._conversations.seconds_to_expiry() + MARGIN_SECONDS):
            self._conversations.expire()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not threading.current_thread():
            self._thread.join()

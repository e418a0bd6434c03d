"""The latest-value store between the tick and the publisher: O(1) puts, nothing ever waits.

The tick puts the newest payload of a topic, replacing one not yet sent (counted as
superseded); the publisher takes everything at once. Its size is bounded by the number of
topics, whatever the broker does.

The tick puts from the daemon's tick thread and the publisher takes on the event loop: a lock
guards the dict, and the publisher is woken once when the store turns non-empty, through the
loop's thread-safe call (a put on the loop's own thread sets the event directly).
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Message:
    topic: str
    payload: object  # a JSON-ready value; the publisher encodes it outside the tick
    qos: int = 0
    retain: bool = False


class LatestStore:
    def __init__(self) -> None:
        """Made on the event loop whose publisher takes from it."""
        self._messages: dict[str, Message] = {}
        self.superseded = 0  # payloads replaced before the publisher took them
        self.ready = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._messages)

    def put(self, message: Message) -> None:
        with self._lock:
            was_empty = not self._messages
            if message.topic in self._messages:
                self.superseded += 1
            self._messages[message.topic] = message
        if threading.get_ident() == self._loop_thread:
            self.ready.set()
        elif was_empty:
            self._loop.call_soon_threadsafe(self.ready.set)

    def take(self) -> list[Message]:
        """Everything waiting, oldest topic first, leaving the store empty."""
        with self._lock:
            messages = list(self._messages.values())
            self._messages.clear()
            self.ready.clear()
        return messages

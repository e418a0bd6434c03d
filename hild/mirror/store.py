"""The latest-value store between the tick and the publisher: O(1) puts, nothing ever waits.

The tick puts the newest payload of a topic, replacing one not yet sent (counted as
superseded); the publisher takes everything at once. Its size is bounded by the number of
topics, whatever the broker does.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Message:
    topic: str
    payload: object  # a JSON-ready value; the publisher encodes it outside the tick
    qos: int = 0
    retain: bool = False


class LatestStore:
    def __init__(self) -> None:
        self._messages: dict[str, Message] = {}
        self.superseded = 0  # payloads replaced before the publisher took them
        self.ready = asyncio.Event()

    def __len__(self) -> int:
        return len(self._messages)

    def put(self, message: Message) -> None:
        if message.topic in self._messages:
            self.superseded += 1
        self._messages[message.topic] = message
        self.ready.set()

    def take(self) -> list[Message]:
        """Everything waiting, oldest topic first, leaving the store empty."""
        messages = list(self._messages.values())
        self._messages.clear()
        self.ready.clear()
        return messages

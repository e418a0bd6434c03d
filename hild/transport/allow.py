"""Which source addresses a port takes input from: the ``allow=`` option of udp and tcp URLs."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

ANY = "any"
LOOPBACK_NETWORKS = "127.0.0.0/8,::1/128"

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class AllowError(ValueError):
    """An allow list entry that is not an address, a network or ``any``; names the entry."""


@dataclass(frozen=True, slots=True)
class SourceFilter:
    """A set of IP networks input may come from, or everyone (``any``).

    Build it with parse(); the default (no allow option) is loopback only. An IPv4-mapped IPv6
    address (``::ffff:127.0.0.1``, as a dual-stack socket reports an IPv4 sender) is also
    judged as the IPv4 address it maps.
    """

    networks: tuple[Network, ...]
    everyone: bool = False

    @classmethod
    def parse(cls, text: str | None) -> SourceFilter:
        """Build a filter from the option text; None means the loopback-only default.

        Raises AllowError naming the first entry that is not an address, a CIDR network or
        ``any``.
        """
        if text is None:
            text = LOOPBACK_NETWORKS
        entries = [entry.strip() for entry in text.split(",")]
        if not any(entries):
            raise AllowError("the allow list is empty")
        networks: list[Network] = []
        everyone = False
        for entry in entries:
            if not entry:
                raise AllowError(f"empty entry in the allow list {text!r}")
            if entry.lower() == ANY:
                everyone = True
                continue
            try:
                networks.append(ipaddress.ip_network(entry, strict=False))
            except ValueError:
                raise AllowError(
                    f"allow entry {entry!r} is not an IP address, a CIDR network or 'any'"
                ) from None
        return cls(tuple(networks), everyone)

    def allows(self, host: str) -> bool:
        """True when input from host (an IP address as a socket reports it) is allowed."""
        if self.everyone:
            return True
        try:
            address = ipaddress.ip_address(host.partition("%")[0])  # drop an IPv6 scope id
        except ValueError:
            return False
        candidates: tuple[ipaddress.IPv4Address | ipaddress.IPv6Address, ...] = (address,)
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            candidates = (address, address.ipv4_mapped)
        return any(a in network for a in candidates for network in self.networks)

    def __str__(self) -> str:
        """The normalised option text, e.g. ``127.0.0.0/8,::1/128`` or ``any``."""
        if self.everyone:
            return ANY
        return ",".join(str(network) for network in self.networks)

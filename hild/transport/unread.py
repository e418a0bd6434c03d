"""How far behind a TCP client is: bytes written to it that it has not read yet.

Some of them are still ours (the transport's buffer, the socket's send queue: SIOCOUTQ); when
the client is on this machine, the rest sit in its own socket's receive queue, which the
kernel tells through sock_diag (the netlink interface `ss` uses), looked up by the client's
address and ours. A client elsewhere keeps its receive queue to itself: only what is still
ours shows, and a client that does not read shows only once its receive buffer is full and
its window closes. A client that never reads can take a megabyte or more into its receive
queue first (Linux grows it on its own), minutes of NMEA, so for a local one, and the
attacks this guards against come from this machine, its own queue is what tells.
"""

from __future__ import annotations

import contextlib
import fcntl
import socket
import struct
import termios

# linux/netlink.h, linux/sock_diag.h, linux/inet_diag.h
_NETLINK_SOCK_DIAG = 4
_SOCK_DIAG_BY_FAMILY = 20
_NLM_F_REQUEST = 1
_NLMSG_ERROR = 2
_NO_COOKIE = 0xFFFFFFFF
_HEADER = struct.Struct("=IHHII")  # nlmsghdr: length, type, flags, sequence, port id
_REQUEST = struct.Struct("=BBBxI")  # inet_diag_req_v2: family, protocol, extensions, states
_SOCKID = struct.Struct("!HH16s16s")  # inet_diag_sockid: ports and addresses, network order
_TAIL = struct.Struct("=III")  # the sockid's interface and cookie, host order
_RQUEUE_OFFSET = _HEADER.size + 4 + _SOCKID.size + _TAIL.size + 4  # inet_diag_msg.idiag_rqueue


def send_queue_bytes(sock: socket.socket) -> int:
    """Bytes in a socket's send queue, not yet sent or not yet acknowledged; 0 if unknown."""
    with contextlib.suppress(OSError, ValueError):
        buf = fcntl.ioctl(sock.fileno(), termios.TIOCOUTQ, b"\0\0\0\0")  # SIOCOUTQ on Linux
        return int(struct.unpack("i", buf)[0])
    return 0


class PeerQueues:
    """Asks the kernel how much a TCP peer on this machine has received and not read.

    One netlink socket, opened at the first question, closed by close(). A peer elsewhere,
    or a kernel that does not answer, gives None.
    """

    def __init__(self) -> None:
        self._sock: socket.socket | None = None
        self._failed = False
        self._sequence = 0

    def unread(self, peer: tuple, ours: tuple) -> int | None:
        """Bytes the socket at address peer, connected to ours, holds unread; None if unknown."""
        request = self._request(peer, ours)
        if request is None or self._failed:
            return None
        try:
            sock = self._socket()
            sock.send(request)
            answer = sock.recv(4096)
        except OSError:  # no answer now (BlockingIOError), or no sock_diag at all
            return None
        if len(answer) < _HEADER.size:
            return None
        _, kind, _, sequence, _ = _HEADER.unpack_from(answer)
        if kind == _NLMSG_ERROR or sequence != self._sequence or len(answer) < _RQUEUE_OFFSET + 4:
            return None  # not on this machine (ENOENT), or an answer to an earlier question
        return int(struct.unpack_from("=I", answer, _RQUEUE_OFFSET)[0])

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def _socket(self) -> socket.socket:
        if self._sock is None:
            try:
                sock = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, _NETLINK_SOCK_DIAG)
            except (OSError, AttributeError):
                self._failed = True
                raise OSError("no sock_diag") from None
            sock.setblocking(False)  # the kernel answers before send returns
            self._sock = sock
        return self._sock

    def _request(self, peer: tuple, ours: tuple) -> bytes | None:
        family = socket.AF_INET6 if ":" in str(peer[0]) else socket.AF_INET
        try:
            src = socket.inet_pton(family, str(peer[0]).partition("%")[0])
            dst = socket.inet_pton(family, str(ours[0]).partition("%")[0])
        except (OSError, ValueError):
            return None
        self._sequence = (self._sequence + 1) & 0xFFFFFFFF
        body = (
            _REQUEST.pack(family, socket.IPPROTO_TCP, 0, 0xFFFFFFFF)
            + _SOCKID.pack(int(peer[1]), int(ours[1]), src.ljust(16, b"\0"), dst.ljust(16, b"\0"))
            + _TAIL.pack(0, _NO_COOKIE, _NO_COOKIE)
        )
        header = _HEADER.pack(
            _HEADER.size + len(body), _SOCK_DIAG_BY_FAMILY, _NLM_F_REQUEST, self._sequence, 0
        )
        return header + body

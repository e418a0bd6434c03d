"""Commands a user pastes from the banner: read a sensor, drive a command device.

Each is one shell line that works as pasted on this machine: socat only when it is installed,
else the Python that runs hild (``sys.executable``, which has pyserial); a command device is
driven as a real controller drives it: a neutral command first (it arms controls that latched
after a watchdog trip), then the command repeated faster than the device's watchdog lease.
Nothing here names a serial adapter hild itself holds: its other end is the controller's.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys

from hild.bus.device import CommandDevice
from hild.transport.base import Port

LOOPBACK = ("127.0.0.1", "localhost", "::1")
WILDCARD = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}


# The Python one-liners end quietly on Ctrl-C (the default SIGINT action, as cat's or socat's),
# not with a KeyboardInterrupt traceback.
QUIET = "import signal; signal.signal(signal.SIGINT, signal.SIG_DFL); "


def python_command() -> str:
    """`python` when that is the interpreter running hild (an activated venv), else its path."""
    on_path = shutil.which("python")
    if on_path and os.path.abspath(on_path) == os.path.abspath(sys.executable):
        return "python"
    return shlex.quote(sys.executable)


def have_socat() -> bool:
    return shutil.which("socat") is not None


def _py_host(host: str) -> str:
    """A Python literal for a (host, port) tuple's host, in double quotes (shell-safe in '')."""
    return '"' + host + '"'


def _family(host: str) -> str:
    return "socket.AF_INET6" if ":" in host else "socket.AF_INET"


def _socat_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def network_address(port: Port) -> tuple[str, int] | None:
    """Where a program on this machine reaches a receiving UDP or TCP port, once started."""
    spec = port.spec
    if spec.scheme == "udp":
        local = getattr(port, "local_address", None)
        if not getattr(port, "receives", False) or not local:
            return None
        host, number = str(local[0]), int(local[1])
    elif spec.scheme == "tcp":
        host = spec.host or "127.0.0.1"
        bound = getattr(port, "bound_port", None) or spec.port
        if bound is None:
            return None
        number = int(bound)
    else:
        return None
    return WILDCARD.get(host, host), int(number)


def printf(line: str) -> str:
    """`printf '<line>\\r\\n'` (a '%' in the line is doubled; NMEA has no quote)."""
    return "printf '" + line.replace("%", "%%") + "\\r\\n'"


def repeat_loop(neutral: str, command: str, period_s: float) -> str:
    """The neutral line once, then the command every ``period_s``, until Ctrl-C."""
    first = f"{printf(neutral)}; " if neutral else ""
    return f"{{ {first}while :; do {printf(command)}; sleep {period_s:g}; done; }}"


def udp_sink(host: str, number: int) -> str:
    """A pipe's end that sends each line it reads as a datagram to host:number."""
    if have_socat():
        return f"socat - UDP:{_socat_host(host)}:{number}"
    return (
        f"{python_command()} -c '{QUIET}import socket,sys; s=socket.socket({_family(host)},"
        f"socket.SOCK_DGRAM); all(s.sendto(line,({_py_host(host)},{number})) "
        "for line in sys.stdin.buffer)'"
    )


def tcp_sink(host: str, number: int) -> str:
    """A pipe's end that writes what it reads to a TCP connection to host:number."""
    if have_socat():
        return f"socat - TCP:{_socat_host(host)}:{number}"
    return (
        f"{python_command()} -c '{QUIET}import socket,sys; s=socket.create_connection(("
        f"{_py_host(host)},{number})); all(s.sendall(line) is None "
        "for line in sys.stdin.buffer)'"
    )


def lease_period_s(device: CommandDevice, time_scale: float = 1.0) -> float:
    """How often to repeat a command, in wall seconds: well within the watchdog's lease (0.2 s
    for 0.5 s), which runs on the run's simulated time (at time scale 5, 0.04 s)."""
    return max(round(device.watchdog.timeout_s / 2.5 / time_scale, 2), 0.01)


def command_example(device: CommandDevice, port: Port, time_scale: float = 1.0) -> str:
    """A shell line that arms ``device`` and drives it through ``port`` (a run at
    ``time_scale``); '' when this machine cannot reach the port (a serial adapter: the
    controller is on its other end)."""
    if getattr(port, "mode", "both") == "send":
        return ""  # the port takes nothing in
    loop = repeat_loop(
        device.neutral_line().decode(),
        device.example_line().decode(),
        lease_period_s(device, time_scale),
    )
    spec = port.spec
    if spec.scheme == "pty" and spec.path:
        return f"{loop} > {shlex.quote(spec.path)}"
    address = network_address(port)
    if address is None:
        return ""
    sink = udp_sink if spec.scheme == "udp" else tcp_sink
    return f"{loop} | {sink(*address)}"


def read_example(port: Port, baud: int) -> str:
    """A shell line that shows what hild sends on a sensor's ``port``; '' for none (a serial
    adapter hild writes to, an address not on this machine)."""
    spec = port.spec
    if getattr(port, "mode", "both") == "receive":
        return ""
    if spec.scheme == "pty" and spec.path:
        return f"{python_command()} -m serial.tools.miniterm {shlex.quote(spec.path)} {baud}"
    if spec.scheme == "tcp":
        address = network_address(port)
        return "" if address is None else tcp_reader(*address)
    if spec.scheme == "udp" and spec.host in LOOPBACK and spec.port and not spec.option("listen"):
        return udp_reader(spec.host, spec.port)
    return ""


def tcp_reader(host: str, number: int) -> str:
    if have_socat():
        return f"socat -u TCP:{_socat_host(host)}:{number} -"
    return (
        f"{python_command()} -c '{QUIET}import shutil,socket; shutil.copyfileobj(socket."
        f'create_connection(({_py_host(host)},{number})).makefile("rb",0), '
        'open(1,"wb",0))\''
    )


def udp_reader(host: str, number: int) -> str:
    if have_socat():
        return f"socat -u UDP-RECV:{number},bind={_socat_host(host)} -"
    return (
        f"{python_command()} -c '{QUIET}import shutil,socket; s=socket.socket({_family(host)},"
        f"socket.SOCK_DGRAM); s.bind(({_py_host(host)},{number})); "
        'shutil.copyfileobj(s.makefile("rb",0), open(1,"wb",0))\''
    )

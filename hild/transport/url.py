"""Port URLs from the bench file (serial://, udp://, tcp://, pty://, and the CAN buses
socketcan:// and canudp://) parsed into a PortSpec."""

from __future__ import annotations

import ipaddress
import os
import re
from dataclasses import dataclass
from urllib.parse import parse_qsl, unquote, urlsplit

from hild.names import NAME_EXPECTED, is_name
from hild.rundir import DEFAULT_RUN_DIR
from hild.transport.allow import AllowError, SourceFilter

STANDARD_BAUDS = (
    300,
    600,
    1200,
    2400,
    4800,
    9600,
    19200,
    38400,
    57600,
    115200,
    230400,
    460800,
    921600,
)
LOOPBACK = "127.0.0.1"
DEFAULT_MAX_CLIENTS = 16  # a TCP port's clients at a time: plotters, loggers, controllers
MAX_CLIENTS_LIMIT = 1000
BROADCAST_ADDRESS = "255.255.255.255"

EXAMPLES = {
    "serial": "serial:///dev/ttyUSB0?baud=4800",
    "udp": "udp://127.0.0.1:10110",
    "tcp": "tcp://127.0.0.1:10110",
    "pty": "pty://gps",
    "socketcan": "socketcan://can0",
    "canudp": "canudp://239.74.163.2:43113",
}
FORMS = {
    "serial": "serial:///ABSOLUTE/DEVICE/PATH[?baud=RATE][&mode=both|send|receive]",
    "udp": (
        "udp://HOST:PORT[?broadcast=1][&ttl=N][&bind=HOST:PORT][&allow=ADDRESSES|any]"
        "[&mode=both|send|receive], or udp://HOST:PORT?listen=1[&allow=...][&mode=...]"
        " to receive on HOST:PORT and reply to the senders"
    ),
    "tcp": "tcp://[HOST]:PORT[?allow=ADDRESSES|any][&mode=both|send|receive][&max_clients=N]",
    "pty": "pty://NAME or pty:///ABSOLUTE/PATH[?baud=RATE][&mode=both|send|receive][&pace=0]",
    # NMEA 2000 devices' frames on a CAN bus through python-can (hild/transport/can.py)
    "socketcan": "socketcan://INTERFACE[?mode=both|send|receive] (a SocketCAN interface: can0, "
    "vcan0)",
    "canudp": "canudp://GROUP:PORT[?ttl=N][&mode=both|send|receive] (CAN frames over UDP "
    "multicast, python-can's udp_multicast; GROUP in 224.0.0.0/4 or ff00::/8)",
}
ALLOWED_OPTIONS: dict[str, tuple[str, ...]] = {
    "serial": ("baud", "mode"),
    "pty": ("baud", "mode", "pace"),
    "udp": ("broadcast", "ttl", "bind", "listen", "allow", "mode"),
    "tcp": ("allow", "mode", "max_clients"),
    "socketcan": ("mode",),
    "canudp": ("ttl", "mode"),
}
CAN_SCHEMES = ("socketcan", "canudp")  # CAN buses: the frames of NMEA 2000 devices
# a SocketCAN interface's name: at most 15 characters (the kernel's IFNAMSIZ less its NUL)
_INTERFACE = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]{0,14}")
MODES = ("both", "send", "receive")
# NMEA 2000 gateways' text framings, named before a scheme (``ydraw+udp://``): the lines an
# N2K device sends there (hild/n2k/lines.py); a plain scheme carries NMEA 0183 (or YDRAW, an
# N2K device's default)
FRAMINGS = ("ydraw", "actisense")
_HOSTNAME = re.compile(r"[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?")
_TRUE = ("", "1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


class PortUrlError(ValueError):
    """A port URL that cannot be used; the message names the URL, the problem and the form."""

    def __init__(self, url: str, problem: str, expected: str):
        self.url = url
        self.problem = problem
        self.expected = expected
        super().__init__(f"port URL {url!r}: {problem}; expected {expected}")


@dataclass(frozen=True)
class PortSpec:
    """Where one port is, as parsed from its URL; the port classes read nothing else."""

    url: str
    scheme: str
    host: str | None = None
    port: int | None = None
    path: str | None = None
    baud: int | None = None
    options: tuple[tuple[str, str], ...] = ()
    framing: str = ""  # an NMEA 2000 framing named before the scheme (FRAMINGS), or ""

    @property
    def identity(self) -> tuple:
        """What makes two URLs one port: scheme, address, path, baud and every option."""
        return (self.scheme, self.host, self.port, self.path, self.baud, self.options)

    def option(self, name: str, default: str | None = None) -> str | None:
        """Return a validated query option (normalised text), or default when absent."""
        for key, value in self.options:
            if key == name:
                return value
        return default


def format_host_port(host: str, port: int) -> str:
    """Render host and port as text, bracketing IPv6 addresses."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def split_host_port(text: str) -> tuple[str | None, str | None]:
    """Split ``HOST:PORT`` / ``[V6]:PORT`` / ``:PORT`` / ``HOST`` without validating either part."""
    if text.startswith("["):
        end = text.find("]")
        if end < 0:
            return text, None
        host, rest = text[1:end], text[end + 1 :]
        if not rest:
            return host, None
        return host, rest[1:] if rest.startswith(":") else rest
    host, sep, port = text.rpartition(":")
    if not sep:
        return text or None, None
    return host or None, port


def parse_port_url(url: str, run_dir: str | os.PathLike = DEFAULT_RUN_DIR) -> PortSpec:
    """Parse and validate a port URL, resolving relative pty names against run_dir."""
    if not isinstance(url, str) or not url.strip():
        raise PortUrlError(str(url), "it is empty", _any_form())
    text = url.strip()
    if "://" not in text:
        raise PortUrlError(url, "it has no scheme", _any_form())
    try:
        parts = urlsplit(text)
    except ValueError as e:
        raise PortUrlError(url, f"it cannot be parsed ({e})", _any_form()) from None
    scheme = parts.scheme.lower()
    framing = ""
    if "+" in scheme:  # ydraw+udp://: an NMEA 2000 gateway's framing on that transport
        framing, _, scheme = scheme.partition("+")
        if framing not in FRAMINGS:
            raise PortUrlError(
                url,
                f"unknown framing {framing!r} before the scheme",
                f"{' or '.join(FRAMINGS)} (NMEA 2000 as a gateway's lines: ydraw+udp://, "
                "ydraw+tcp://, actisense+serial://), or a plain scheme",
            )
        text = text.split("+", 1)[1]
        parts = urlsplit(text)
    if scheme not in FORMS:
        raise PortUrlError(url, f"unknown scheme {parts.scheme!r}", _any_form())
    expected = f"{FORMS[scheme]}, e.g. {EXAMPLES[scheme]}"
    if parts.fragment:
        raise PortUrlError(url, f"unexpected fragment '#{parts.fragment}'", expected)
    if scheme in CAN_SCHEMES and framing == "actisense":
        problem = "a CAN bus carries the frames themselves, not Actisense's whole messages"
        raise PortUrlError(url, problem, expected)
    options = _parse_query(url, scheme, parts.query, expected)
    baud = None
    if "baud" in options:
        baud = _parse_baud(url, options.pop("baud"), expected)
    if scheme == "serial":
        path = _serial_path(url, parts.netloc, unquote(parts.path), expected)
        return PortSpec(url, scheme, path=path, baud=baud, options=_items(options), framing=framing)
    if scheme == "pty":
        path = _pty_path(url, parts.netloc, unquote(parts.path), run_dir, expected)
        return PortSpec(url, scheme, path=path, baud=baud, options=_items(options), framing=framing)
    if parts.path not in ("", "/"):
        raise PortUrlError(url, f"unexpected path {parts.path!r} after the address", expected)
    if scheme == "socketcan":  # the interface's name stands where a host would
        if not _INTERFACE.fullmatch(parts.netloc):
            problem = f"{parts.netloc!r} is not a network interface's name"
            raise PortUrlError(url, problem, expected)
        return PortSpec(url, scheme, path=parts.netloc, options=_items(options), framing=framing)
    listen = options.get("listen") == "1"
    host, port = _host_port(url, parts.netloc, expected, allow_zero=scheme == "tcp" or listen)
    if scheme == "canudp" and not is_multicast(host):
        problem = f"{host} is not a multicast group (224.0.0.0/4 or ff00::/8)"
        raise PortUrlError(url, problem, expected)
    if listen:
        _check_listen(url, host, options, expected)
    if "bind" in options:
        options["bind"] = _parse_bind(url, options["bind"], expected)
    return PortSpec(url, scheme, host=host, port=port, options=_items(options), framing=framing)


def _any_form() -> str:
    forms = "; ".join(f"{FORMS[s]} (e.g. {EXAMPLES[s]})" for s in FORMS)
    return f"one of {forms}"


def _items(options: dict[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(options.items()))


def _parse_query(url: str, scheme: str, query: str, expected: str) -> dict[str, str]:
    allowed = ALLOWED_OPTIONS[scheme]
    options: dict[str, str] = {}
    if not query:
        return options
    for key, value in parse_qsl(query, keep_blank_values=True):
        if key not in allowed:
            which = f"one of {', '.join(allowed)}" if allowed else "none"
            raise PortUrlError(
                url, f"unknown query parameter {key!r}", f"{scheme} parameters: {which}; {expected}"
            )
        if key in options:
            raise PortUrlError(url, f"query parameter {key!r} given twice", expected)
        options[key] = _check_option(url, key, value.strip(), expected)
    return options


def _check_option(url: str, key: str, value: str, expected: str) -> str:
    if key in ("broadcast", "listen", "pace"):
        if value.lower() in _TRUE:
            return "1"
        if value.lower() in _FALSE:
            return "0"
        raise PortUrlError(url, f"{key}={value!r} is not a flag", f"1 or 0; {expected}")
    if key == "mode":
        if value.lower() not in MODES:
            raise PortUrlError(
                url, f"mode={value!r} is not a direction", f"one of {', '.join(MODES)}; {expected}"
            )
        return value.lower()
    if key == "allow":
        try:
            return str(SourceFilter.parse(value))
        except AllowError as e:
            allow_expected = (
                "allow=ADDRESS_OR_NETWORK[,...] (e.g. allow=127.0.0.1,10.0.0.0/8) "
                f"or allow=any; {expected}"
            )
            raise PortUrlError(url, str(e), allow_expected) from None
    if key == "max_clients":
        clients = _decimal(value)
        if clients is None or not 1 <= clients <= MAX_CLIENTS_LIMIT:
            raise PortUrlError(
                url,
                f"max_clients={value!r} is not a number of clients",
                f"an integer 1..{MAX_CLIENTS_LIMIT} (default {DEFAULT_MAX_CLIENTS}); {expected}",
            )
        return str(clients)
    if key == "ttl":
        ttl = _decimal(value)
        if ttl is None or not 0 <= ttl <= 255:
            raise PortUrlError(url, f"ttl={value!r} is not a hop count", f"0..255; {expected}")
        return str(ttl)
    return value


def _decimal(text: str) -> int | None:
    return int(text) if text.isascii() and text.isdigit() else None


def _parse_baud(url: str, value: str, expected: str) -> int:
    rates = ", ".join(str(b) for b in STANDARD_BAUDS)
    baud_expected = f"baud=RATE with RATE one of {rates}; {expected}"
    baud = _decimal(value)
    if baud is None:
        raise PortUrlError(url, f"baud={value!r} is not an integer", baud_expected)
    if baud not in STANDARD_BAUDS:
        raise PortUrlError(url, f"baud={baud} is not a standard rate", baud_expected)
    return baud


def _serial_path(url: str, netloc: str, path: str, expected: str) -> str:
    if netloc:
        problem = f"{netloc!r} stands where the device path should start (use three slashes)"
        raise PortUrlError(url, problem, expected)
    if not path or path == "/":
        raise PortUrlError(url, "the device path is missing", expected)
    return os.path.normpath(path)


def _pty_path(url: str, netloc: str, path: str, run_dir: str | os.PathLike, expected: str) -> str:
    if not netloc:
        if not path or path.endswith("/"):
            raise PortUrlError(url, "the pty path is missing or ends in '/'", expected)
        return os.path.normpath(path)
    name = unquote(netloc) + path
    segments = name.split("/")
    if not all(is_name(s) for s in segments):
        raise PortUrlError(
            url,
            f"the pty name {name!r} is not a plain relative name",
            f"{NAME_EXPECTED}, or such names separated by '/'; {expected}",
        )
    return os.path.abspath(os.path.join(os.fspath(run_dir), name))


def _host_port(url: str, netloc: str, expected: str, allow_zero: bool) -> tuple[str, int]:
    if "@" in netloc:
        raise PortUrlError(url, "user information is not supported", expected)
    host, port_text = split_host_port(netloc)
    if port_text is None or port_text == "":
        raise PortUrlError(url, "the port number is missing", expected)
    port = _check_port(url, port_text, expected, allow_zero)
    return _check_host(url, host, expected), port


def _check_port(url: str, text: str, expected: str, allow_zero: bool) -> int:
    port = _decimal(text)
    if port is None:
        raise PortUrlError(url, f"port {text!r} is not a number", expected)
    low = 0 if allow_zero else 1
    if not low <= port <= 65535:
        raise PortUrlError(url, f"port {port} is out of range", f"{low}..65535; {expected}")
    return port


def _check_host(url: str, host: str | None, expected: str) -> str:
    if host is None:
        return LOOPBACK
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        pass
    if len(host) > 253 or not _HOSTNAME.fullmatch(host):
        raise PortUrlError(url, f"{host!r} is not an IP address or host name", expected)
    return host


def _check_listen(url: str, host: str, options: dict[str, str], expected: str) -> None:
    """A listening udp port receives on its own address: no bind=, no broadcast or multicast."""
    if "bind" in options:
        problem = "listen=1 receives on HOST:PORT itself, so bind= cannot be given too"
        raise PortUrlError(url, problem, expected)
    if options.get("broadcast") == "1" or host == BROADCAST_ADDRESS:
        raise PortUrlError(url, "listen=1 cannot be combined with broadcast", expected)
    if is_multicast(host):
        raise PortUrlError(url, "listen=1 cannot be combined with a multicast address", expected)


def is_multicast(host: str) -> bool:
    """True for an IP address in a multicast range (224.0.0.0/4, ff00::/8)."""
    try:
        return ipaddress.ip_address(host).is_multicast
    except ValueError:
        return False


def _parse_bind(url: str, value: str, expected: str) -> str:
    bind_expected = f"bind=HOST:PORT (e.g. bind=127.0.0.1:10111); {expected}"
    host, port_text = split_host_port(value)
    if not port_text:
        raise PortUrlError(url, f"bind={value!r} has no port", bind_expected)
    port = _check_port(url, port_text, bind_expected, allow_zero=False)
    return format_host_port(_check_host(url, host, bind_expected), port)

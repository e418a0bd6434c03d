"""The mirror's configuration: broker, topics, rates, QoS, credentials, TLS, runtime control.

Read from a bench's ``[mqtt]`` table and from ``hild run --mqtt URL``. Secrets never come
from the command line: a password is read from an environment variable or a file.
"""

from __future__ import annotations

import os
import ssl
from dataclasses import dataclass, field, replace
from urllib.parse import unquote, urlsplit

from hild.config import ConfigError, Problems, Section, beside, read_text
from hild.names import TOPIC_PREFIX_EXPECTED, topic_prefix

DEFAULT_PORTS = {"mqtt": 1883, "mqtts": 8883}
PASSWORD_ENV = "HILD_MQTT_PASSWORD"  # read when the bench names no other source


@dataclass(frozen=True)
class TopicConfig:
    """How often a topic is published [Hz, wall clock] and at which QoS."""

    rate_hz: float
    qos: int = 0


# Rates a dashboard needs without loading a Raspberry Pi's broker: the vessel's motion at
# 10 Hz, what changes slowly at 1-2 Hz.
DEFAULT_TOPICS: dict[str, TopicConfig] = {
    "state": TopicConfig(10.0),
    "actuators": TopicConfig(10.0),
    "environment": TopicConfig(2.0),
    "sensors": TopicConfig(2.0),
    "bus": TopicConfig(1.0),
    "stats": TopicConfig(1.0),
    "signalk": TopicConfig(2.0),
    "traffic": TopicConfig(1.0),  # each target's traffic/<name>: only a run with targets
}


@dataclass(frozen=True)
class MirrorConfig:
    """Everything the mirror needs; ``prefix`` None means ``hild/<bench name>``."""

    host: str = "127.0.0.1"
    port: int = 1883
    tls: bool = False
    prefix: str | None = None
    client_id: str = ""
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    keepalive_s: int = 5  # a stalled broker is given up after 1.5 to 2 keepalives
    timeout_s: float = 0.5  # for one publish or the broker's answer to connect
    reconnect_min_s: float = 0.5
    reconnect_max_s: float = 10.0
    topics: dict[str, TopicConfig] = field(default_factory=lambda: dict(DEFAULT_TOPICS))
    signalk: bool = False
    signalk_prefix: str = "vessels/self"
    control: bool = False

    @property
    def url(self) -> str:
        return f"{'mqtts' if self.tls else 'mqtt'}://{self.host}:{self.port}"

    def topic_prefix(self, bench_name: str) -> str:
        return self.prefix if self.prefix is not None else f"hild/{bench_name}"


def parse_broker_url(url: str, source: str = "--mqtt") -> tuple[str, int, bool, str | None]:
    """``mqtt://HOST[:PORT]`` or ``mqtts://...`` -> (host, port, tls, username)."""
    expected = "mqtt://HOST[:PORT] or mqtts://HOST[:PORT] (e.g. mqtt://127.0.0.1:1883)"
    parts = urlsplit(url)
    if parts.scheme not in DEFAULT_PORTS or not parts.hostname:
        raise ConfigError(source, "url", url, expected)
    if parts.password is not None:
        raise ConfigError(
            source,
            "url",
            "mqtt://...:***@...",
            "no password in the URL: set "
            f"${PASSWORD_ENV}, or password_env or password_file in the bench's "
            "[mqtt] table",
        )
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise ConfigError(source, "url", url, expected)
    try:
        port = parts.port or DEFAULT_PORTS[parts.scheme]
    except ValueError:
        raise ConfigError(source, "url", url, expected) from None
    username = unquote(parts.username) if parts.username else None
    return parts.hostname, port, parts.scheme == "mqtts", username


def read_mirror(section: Section) -> MirrorConfig:
    """A bench's ``[mqtt]`` table; every problem of it at once (a MultipleConfigError)."""
    problems = Problems()
    attempt = problems.attempt
    broker = attempt(_broker, section)
    host, port, tls, url_user = broker or ("127.0.0.1", 1883, False, None)
    username = attempt(lambda: section.string("username", url_user or "") or None)
    password = attempt(_password, section)
    files = {
        key: path
        for key in ("ca_file", "cert_file", "key_file")
        if (path := attempt(_pem_file, section, key))
    }
    topics = attempt(_topics, section, default=dict(DEFAULT_TOPICS))
    # each key on its own: a bad one is reported (and stands in as its default), the others read
    prefix = attempt(_prefix, section)
    client_id = attempt(section.string, "client_id", "", default="")
    keepalive_s = attempt(lambda: section.integer("keepalive_s", 5, lo=2), default=5)
    timeout_s = attempt(
        lambda: section.number("timeout_s", 0.5, lo=0.05, hi=30.0, unit="s"), default=0.5
    )
    reconnect_max_s = attempt(
        lambda: section.number("reconnect_max_s", 10.0, lo=0.5, hi=600.0, unit="s"), default=10.0
    )
    signalk = attempt(section.boolean, "signalk", False, default=False)
    signalk_prefix = attempt(_prefix, section, "signalk_prefix", "vessels/self", default="")
    control = attempt(section.boolean, "control", False, default=False)
    if (
        not problems.failed(section.key("cert_file"))
        and not problems.failed(section.key("key_file"))
        and (("cert_file" in files) != ("key_file" in files))
    ):
        problems.add(
            section.error("cert_file", files.get("cert_file"), "cert_file and key_file together")
        )
    attempt(section.finish)
    problems.raise_any()
    config = MirrorConfig(
        host=host,
        port=port,
        tls=tls or bool(files.get("ca_file")),
        prefix=prefix,
        client_id=client_id,
        username=username,
        password=password,
        ca_file=files.get("ca_file"),
        cert_file=files.get("cert_file"),
        key_file=files.get("key_file"),
        keepalive_s=keepalive_s,
        timeout_s=timeout_s,
        reconnect_max_s=reconnect_max_s,
        topics=topics,
        signalk=signalk,
        signalk_prefix=signalk_prefix or "",
        control=control,
    )
    _check_tls(section, config)
    return config


def _broker(section: Section) -> tuple[str, int, bool, str | None]:
    url = section.string("url", "mqtt://127.0.0.1:1883")
    try:
        return parse_broker_url(url, section.file)
    except ConfigError as e:
        raise section.error("url", e.value, e.expected) from None


def _pem_file(section: Section, key: str) -> str | None:
    """A certificate or key file's path (relative to the bench), checked readable."""
    value = section.string(key, "")
    if not value:
        return None
    path = beside(section.file, value)
    try:
        read_text(path, NOUNS[key], MAX_PEM_BYTES)
    except ConfigError as e:
        raise section.error(key, value, e.expected) from None
    return str(path)


def _topics(section: Section) -> dict[str, TopicConfig]:
    """The ``[mqtt.topics]`` table: each topic's rate and QoS; every problem of it at once."""
    topics = dict(DEFAULT_TOPICS)
    table = section.table("topics")
    if table is None:
        return topics
    problems = Problems()
    for name in list(table.data):
        if name not in DEFAULT_TOPICS:
            table.raw(name)  # read, to be named once: as no topic, not also as an unknown key
            problems.add(
                table.error(name, table.data[name], "a topic: " + ", ".join(DEFAULT_TOPICS))
            )
            continue
        found = problems.attempt(_topic, table, name)
        if found is not None:
            topics[name] = found
    problems.attempt(table.finish)
    problems.raise_any()
    return topics


def _topic(table: Section, name: str) -> TopicConfig:
    t = table.table(name, required=True)
    assert t is not None
    default = DEFAULT_TOPICS[name]
    problems = Problems()
    rate_hz = problems.attempt(
        lambda: t.number("rate_hz", default.rate_hz, positive=True, hi=100.0, unit="Hz"),
        default=default.rate_hz,
    )
    qos = problems.attempt(lambda: t.integer("qos", default.qos, lo=0), default=None)
    if qos is not None and qos > 2:
        problems.add(t.error("qos", qos, "0, 1 or 2"))
    problems.attempt(t.finish)
    problems.raise_any()
    return TopicConfig(rate_hz, qos)


def from_url(url: str, base: MirrorConfig | None = None) -> MirrorConfig:
    """The bench's mirror (or the defaults) sent to the broker named by ``hild run --mqtt``."""
    host, port, tls, username = parse_broker_url(url)
    config = base or MirrorConfig(password=os.environ.get(PASSWORD_ENV))
    return replace(
        config, host=host, port=port, tls=tls or config.tls, username=username or config.username
    )


def _prefix(section: Section, key: str = "prefix", default: str | None = None) -> str | None:
    """A topic prefix key (hild.names.topic_prefix); None when absent and no default."""
    value = section.raw(key, default)
    if value is None:
        return None
    prefix = topic_prefix(value)
    if prefix is None:
        raise section.error(key, value, TOPIC_PREFIX_EXPECTED)
    return prefix


MAX_PEM_BYTES = 1 << 20  # a bundle of every public CA is about 200 kB
NOUNS = {
    "ca_file": "PEM CA certificate",
    "cert_file": "PEM certificate",
    "key_file": "PEM private key",
    "password_file": "password",
}


def tls_context(config: MirrorConfig) -> ssl.SSLContext | None:
    """The TLS context of a connection to the broker, None without TLS; ssl.SSLError (or
    OSError) for certificate files that cannot be used."""
    if not config.tls:
        return None
    context = ssl.create_default_context(cafile=config.ca_file)
    if config.cert_file:
        context.load_cert_chain(config.cert_file, config.key_file)
    return context


def _check_tls(section: Section, config: MirrorConfig) -> None:
    """Load the certificate files as the mirror will: one that is no certificate or key is the
    bench's to fix, found before the run."""
    if not config.tls or not (config.ca_file or config.cert_file):
        return
    try:
        ssl.create_default_context(cafile=config.ca_file)
    except (ssl.SSLError, OSError) as e:
        expected = f"a file of PEM CA certificates (OpenSSL says: {_reason(e)})"
        raise section.error("ca_file", section.data["ca_file"], expected) from None
    if config.cert_file:
        try:
            ssl.create_default_context().load_cert_chain(config.cert_file, config.key_file)
        except (ssl.SSLError, OSError) as e:
            expected = f"a PEM certificate whose key is key_file (OpenSSL says: {_reason(e)})"
            raise section.error("cert_file", section.data["cert_file"], expected) from None


def _reason(e: Exception) -> str:
    return getattr(e, "reason", None) or getattr(e, "strerror", None) or str(e)


def _password(section: Section) -> str | None:
    env = section.string("password_env", "")
    file = section.string("password_file", "")
    if section.has("password"):
        section.skip("password")  # (read: the table's check of its keys must not print it)
        raise section.error(
            "password",
            "***",
            "no password in the bench file: password_env "
            "(an environment variable) or password_file",
        )
    if env and file:
        raise section.error("password_file", file, "either password_env or password_file")
    if file:
        path = beside(section.file, file)
        try:
            return read_text(path, NOUNS["password_file"], MAX_PEM_BYTES).strip()
        except ConfigError as e:
            raise section.error("password_file", file, e.expected) from None
    if env:
        if env not in os.environ:
            raise section.error("password_env", env, "the name of a set environment variable")
        return os.environ[env]
    return os.environ.get(PASSWORD_ENV)

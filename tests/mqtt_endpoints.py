"""Test-side MQTT: a real mosquitto on a free port, a subscriber, a broker that never reads."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import paho.mqtt.client as mqtt
import pytest

from tests.endpoints import free_tcp_port

MOSQUITTO = shutil.which("mosquitto") or "/usr/sbin/mosquitto"


def wait_until(predicate, timeout: float, step: float = 0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(step)
    return predicate()


class Broker:
    """mosquitto on 127.0.0.1 and a free port; stop() and start() keep the port."""

    def __init__(self, tmp: Path, extra: str = "", anonymous: bool = True):
        if not Path(MOSQUITTO).exists():
            pytest.skip("mosquitto is not installed (.ci/run installs it)")
        self.port = free_tcp_port()
        self.conf = tmp / "mosquitto.conf"
        # as root mosquitto drops to its own user, which cannot read the test's private files
        user = "user root\n" if os.geteuid() == 0 else ""
        self.conf.write_text(
            f"{user}listener {self.port} 127.0.0.1\n{extra}"
            f"allow_anonymous {str(anonymous).lower()}\n"
            "persistence false\n"
        )
        self.log = open(tmp / "mosquitto.log", "ab")  # noqa: SIM115
        self.proc: subprocess.Popen | None = None
        self.start()

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [MOSQUITTO, "-c", str(self.conf)], stdout=self.log, stderr=subprocess.STDOUT
        )
        ok = wait_until(lambda: _accepts(self.port), 10.0)
        assert ok, "mosquitto did not start"

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(10)

    def close(self) -> None:
        self.stop()
        self.log.close()


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


class Subscriber:
    """A paho client in its own thread that keeps every message: (arrival, topic, payload)."""

    def __init__(self, port: int, topic: str = "#"):
        self.messages: list[tuple[float, str, bytes, bool]] = []
        self._lock = threading.Lock()
        self.client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2)
        self.client.on_message = self._on_message
        self.client.connect("127.0.0.1", port, keepalive=10)
        self.client.subscribe(topic, qos=1)
        self.client.loop_start()

    def _on_message(self, _client, _userdata, message) -> None:
        with self._lock:
            self.messages.append(
                (time.monotonic(), message.topic, message.payload, bool(message.retain))
            )

    def on(self, topic: str, since: float = 0.0) -> list[dict]:
        """The JSON payloads received on ``topic`` after ``since`` (time.monotonic())."""
        with self._lock:
            return [json.loads(p) for t, top, p, _ in self.messages if top == topic and t >= since]

    def raw(self, topic: str) -> list[bytes]:
        with self._lock:
            return [p for _, top, p, _ in self.messages if top == topic]

    def topics(self) -> set[str]:
        with self._lock:
            return {top for _, top, _, _ in self.messages}

    def publish(self, topic: str, payload: str | bytes) -> None:
        self.client.publish(topic, payload, qos=1).wait_for_publish(5.0)

    def close(self) -> None:
        self.client.loop_stop()
        self.client.disconnect()


class StalledBroker:
    """Accepts TCP connections and never reads a byte: the broker that hangs."""

    def __init__(self):
        self.server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.server.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(64)
        self.port = self.server.getsockname()[1]
        self.accepted: list[socket.socket] = []
        self._stop = False
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        self.server.settimeout(0.2)
        while not self._stop:
            try:
                conn, _ = self.server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.accepted.append(conn)  # kept open, never read

    def close(self) -> None:
        self._stop = True
        self._thread.join(2.0)
        for conn in self.accepted:
            conn.close()
        self.server.close()


def make_tls_files(tmp: Path) -> dict[str, Path]:
    """A throwaway CA and a server certificate for 127.0.0.1, made with the openssl tool."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    ca_key, ca, key, csr, cert = (
        tmp / n for n in ("ca.key", "ca.crt", "server.key", "server.csr", "server.crt")
    )
    run = lambda *a: subprocess.run(["openssl", *a], check=True, capture_output=True)  # noqa: E731
    run(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "2",
        "-subj",
        "/CN=hild test CA",
        "-keyout",
        str(ca_key),
        "-out",
        str(ca),
    )
    run(
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-subj",
        "/CN=127.0.0.1",
        "-keyout",
        str(key),
        "-out",
        str(csr),
    )
    ext = tmp / "san.ext"
    ext.write_text("subjectAltName = IP:127.0.0.1\n")
    run(
        "x509",
        "-req",
        "-in",
        str(csr),
        "-CA",
        str(ca),
        "-CAkey",
        str(ca_key),
        "-CAcreateserial",
        "-days",
        "2",
        "-extfile",
        str(ext),
        "-out",
        str(cert),
    )
    return {"ca": ca, "cert": cert, "key": key}

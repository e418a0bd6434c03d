"""The run directory: private, held by one daemon at a time, cleaned of a dead one's links.

Before issue 11 the daemon put its links in whatever /tmp/hild it found (another user's, a
world-writable one, a symlink to elsewhere), a second daemon on the same directory silently
took the links over from the first, and links left by a killed daemon stayed until replaced.
"""

from __future__ import annotations

import asyncio
import os
import pwd
import signal
import stat
import subprocess
import sys
import textwrap
import time

import pytest
from endpoints import Daemon, PtyClient

from hild.record import channels
from hild.record.replay import ReplayPlan, replay
from hild.record.writer import RecordWriter
from hild.rundir import LOCK_NAME, RunDir, RunDirError
from hild.transport import PtyPort, parse_port_url
from tests.forked_cli import run_hild

BENCH = """
[bench]
rate_hz = 100
run_dir = "{run_dir}"
[vessel]
profile = "odin"
[[device]]
name = "gps"
type = "gps"
ports = ["pty://gps"]
"""


def write_bench(tmp_path, run_dir) -> str:
    path = tmp_path / "bench.toml"
    path.write_text(textwrap.dedent(BENCH.format(run_dir=run_dir)))
    return str(path)


def hild_run(bench: str, *args: str) -> subprocess.CompletedProcess:
    """`hild run` that is expected to refuse at once (a timeout means it started instead)."""
    return run_hild("run", bench, "--duration", "3", *args, timeout=60)


def me() -> str:
    return pwd.getpwuid(os.geteuid()).pw_name


def test_a_missing_run_dir_is_created_private_and_locked_with_the_pid(tmp_path):
    path = tmp_path / "a" / "hild"
    old = os.umask(0o077)  # the directory is 0755 whatever the umask
    try:
        with RunDir(path):
            st = os.lstat(path)
            assert stat.S_ISDIR(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o755
            assert st.st_uid == os.geteuid()
            assert (path / LOCK_NAME).read_text() == f"{os.getpid()}\n"
            with pytest.raises(
                RunDirError, match=f"in use by another hild \\(PID {os.getpid()}\\)"
            ):
                RunDir(path).acquire()  # a second holder, even in the same process
    finally:
        os.umask(old)
    assert not (path / LOCK_NAME).exists()
    with RunDir(path):  # free again
        pass


def test_a_world_writable_run_dir_is_refused_with_a_clear_message(tmp_path):
    """Reproduces: hild used a /tmp/hild anyone could write to (and replace its links in)."""
    run = tmp_path / "run"
    run.mkdir()
    run.chmod(0o777)
    result = hild_run(write_bench(tmp_path, run))
    assert result.returncode == 2, result
    message = result.stderr
    assert "Traceback" not in message
    assert str(run) in message and "writable by others" in message
    assert f"owner {me()}" in message and "mode 0777" in message
    assert "--run-dir" in message
    assert not (run / "gps").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")
def test_a_run_dir_owned_by_another_user_is_refused(tmp_path):
    nobody = pwd.getpwnam("nobody")
    run = tmp_path / "run"
    run.mkdir(mode=0o755)
    os.chown(run, nobody.pw_uid, nobody.pw_gid)
    result = hild_run(write_bench(tmp_path, run))
    assert result.returncode == 2, result
    assert "Traceback" not in result.stderr
    assert str(run) in result.stderr and "belongs to another user" in result.stderr
    assert "owner nobody" in result.stderr and "mode 0755" in result.stderr
    assert not (run / "gps").exists()


def test_a_symlinked_run_dir_is_refused(tmp_path):
    real = tmp_path / "real"
    real.mkdir(mode=0o755)
    run = tmp_path / "run"
    run.symlink_to(real)
    with pytest.raises(RunDirError) as info:
        RunDir(run).acquire()
    assert str(run) in str(info.value) and "is a symlink" in str(info.value)
    assert str(real) in str(info.value)
    result = hild_run(write_bench(tmp_path, run))
    assert result.returncode == 2 and "is a symlink" in result.stderr, result
    assert not (real / "gps").exists() and not (real / LOCK_NAME).exists()


def test_a_second_daemon_on_the_same_run_dir_refuses_and_the_first_keeps_its_links(tmp_path):
    """Reproduces: a second daemon replaced the first one's links with its own."""
    run = tmp_path / "run"
    bench = write_bench(tmp_path, run)
    first = Daemon(bench, tmp=tmp_path)
    try:
        link = run / "gps"
        target = os.readlink(link)
        second = hild_run(bench)
        assert second.returncode == 2, second
        assert "Traceback" not in second.stderr
        assert f"PID {first.proc.pid}" in second.stderr and str(run) in second.stderr
        assert os.readlink(link) == target  # still the first daemon's pty
        client = PtyClient(link).start()
        try:
            deadline = time.monotonic() + 3.0
            while not client.sentences("GGA") and time.monotonic() < deadline:
                time.sleep(0.05)
            assert client.sentences("GGA"), "the first daemon's pty should still deliver"
        finally:
            client.close()
    finally:
        summary = first.stop()
    assert summary["reason"] == "SIGTERM"
    assert not (run / "gps").exists() and not (run / LOCK_NAME).exists()


def test_stale_pty_links_are_removed_at_start_and_nothing_else(tmp_path):
    """Reproduces: links of a killed daemon stayed, pointing at ptys that are gone (or reused)."""
    run = tmp_path / "run"
    (run / "sub").mkdir(parents=True, mode=0o755)
    run.chmod(0o755)
    (run / "old").symlink_to("/dev/pts/987654")  # a pty long gone
    (run / "sub" / "jets").symlink_to("/dev/pts/987653")
    (run / "gps").symlink_to("/dev/pts/987652")
    (run / "notes.txt").write_text("mine")
    (tmp_path / "elsewhere").write_text("not a pty")
    (run / "keep").symlink_to(tmp_path / "elsewhere")  # not into /dev/pts: left alone
    (run / LOCK_NAME).write_text("999999\n")  # the dead daemon's lock file, unlocked
    daemon = Daemon(write_bench(tmp_path, run), tmp=tmp_path)
    try:
        assert not os.path.lexists(run / "old")
        assert not os.path.lexists(run / "sub" / "jets")
        assert (run / "notes.txt").read_text() == "mine"
        assert os.readlink(run / "keep") == str(tmp_path / "elsewhere")
        assert os.path.realpath(run / "gps").startswith("/dev/pts/")
        assert os.path.exists(run / "gps")  # the live pty, not the dead one
        assert (run / LOCK_NAME).read_text() == f"{daemon.proc.pid}\n"
        removed = {e["path"] for e in daemon.events("rundir.stale_link_removed")}
        assert {str(run / "old"), str(run / "sub" / "jets"), str(run / "gps")} <= removed
    finally:
        daemon.stop()


def test_an_absolute_pty_path_replaces_only_dangling_or_pty_links(tmp_path):
    """Reproduces: pty:///abs/path silently replaced any symlink, e.g. a udev /dev/gps link."""
    device = tmp_path / "ttyUSB0"
    device.write_text("a real device, say")
    link = tmp_path / "gps"

    async def start(path) -> PtyPort:
        port = PtyPort(parse_port_url(f"pty://{path}"))
        try:
            await port.start()
        except BaseException:
            await port.close()
            raise
        return port

    async def scenario() -> None:
        link.symlink_to(device)
        with pytest.raises(OSError, match="refusing to replace the symlink") as info:
            await start(link)
        assert str(link) in str(info.value) and str(device) in str(info.value)
        assert os.readlink(link) == str(device)
        for old in ("/dev/pts/987654", tmp_path / "gone"):  # a dead pty, any dangling link
            if os.path.lexists(link):
                link.unlink()
            link.symlink_to(old)
            port = await start(link)
            assert os.readlink(link) == port.tty_name
            await port.close()
            assert not os.path.lexists(link)

    asyncio.run(scenario())


def gps_recording(tmp_path, sentences: int = 2) -> str:
    """A recording of a few gps sentences 10 ms apart, for `hild replay`."""
    path = tmp_path / "gps.mcap"
    writer = RecordWriter(path, {"hild": {"kind": "test"}}, nmea_log=False)
    writer.start()
    for i in range(sentences):
        payload = {"t": i * 0.01, "utc": "", "sentence": f"$GPTXT,01,01,02,line {i}*00"}
        writer.put(channels.SENSORS + "gps", 1_780_315_200 * 10**9 + i * 10**7, payload)
    writer.close()
    return str(path)


def test_a_replay_holds_the_run_dir_as_a_daemon_does(tmp_path):
    """Reproduces: `hild replay` put its links in a run directory a daemon held, unchecked."""
    run = tmp_path / "run"
    plan = ReplayPlan(gps_recording(tmp_path), (("pty://gps?pace=0", ("gps",)),), run_dir=run)
    with RunDir(run):  # held as `hild run` holds it
        with pytest.raises(RunDirError, match=f"in use by another hild \\(PID {os.getpid()}\\)"):
            asyncio.run(replay(plan))
        assert not os.path.lexists(run / "gps")
    (run / "old").symlink_to("/dev/pts/987654")  # a link a killed daemon left
    assert asyncio.run(replay(plan))["sent"] == 2
    assert sorted(os.listdir(run)) == []  # the stale link, its own link and .lock all gone


def test_a_replay_locks_out_another_and_stops_cleanly_on_sighup(tmp_path):
    """Reproduces: SIGHUP (a closed terminal) killed a replay and left its pty link behind."""
    run = tmp_path / "run"
    replaying = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "hild.cli",
            "replay",
            gps_recording(tmp_path),
            "--to",
            "gps=pty://gps?pace=0",
            "--run-dir",
            str(run),
            "--wait",
            "60",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30.0
        while not (run / "gps").is_symlink() and time.monotonic() < deadline:
            time.sleep(0.01)
        target = os.readlink(run / "gps")
        # a second replay (or a daemon) on the same directory refuses, naming the first
        plan = ReplayPlan(tmp_path / "gps.mcap", (("pty://gps?pace=0", ("gps",)),), run_dir=run)
        with pytest.raises(RunDirError, match=f"in use by another hild \\(PID {replaying.pid}\\)"):
            asyncio.run(replay(plan))
        assert os.readlink(run / "gps") == target  # still the first replay's pty
        replaying.send_signal(signal.SIGHUP)
        _, err = replaying.communicate(timeout=30)
    finally:
        if replaying.poll() is None:
            replaying.kill()
            replaying.communicate()
    assert replaying.returncode == 0, err
    assert '"replay.done"' in err and "Traceback" not in err
    assert not os.path.lexists(run / "gps") and not (run / LOCK_NAME).exists()


def test_a_run_dir_in_a_parent_others_can_write_is_refused_unless_sticky(tmp_path):
    """Reproduces: a run directory inside a world-writable, non-sticky folder was accepted,
    though anyone could rename it away and put their own in its place."""
    parent = tmp_path / "shared"
    parent.mkdir()
    parent.chmod(0o777)
    run = parent / "run"
    result = hild_run(write_bench(tmp_path, run))
    assert result.returncode == 2, result
    assert "Traceback" not in result.stderr
    assert f"run directory {run} is in {parent}, which others can write" in result.stderr
    assert "mode 0777" in result.stderr and "chmod +t" in result.stderr
    assert not run.exists()  # refused before anything was made in it
    run.mkdir(mode=0o755)  # an existing one in such a parent is refused as well
    with pytest.raises(RunDirError, match="which others can write and which is not sticky"):
        RunDir(run).acquire()
    parent.chmod(0o1777)  # sticky, as /tmp: only the directory's owner can rename it
    with RunDir(run):
        assert (run / LOCK_NAME).read_text() == f"{os.getpid()}\n"


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")
def test_a_run_dir_in_another_users_folder_is_refused(tmp_path):
    nobody = pwd.getpwnam("nobody")
    parent = tmp_path / "theirs"
    parent.mkdir(mode=0o755)
    os.chown(parent, nobody.pw_uid, nobody.pw_gid)
    run = parent / "run"
    result = hild_run(write_bench(tmp_path, run))
    assert result.returncode == 2, result
    assert "Traceback" not in result.stderr
    assert f"is in {parent}, which belongs to another user" in result.stderr
    assert "owner nobody" in result.stderr and not run.exists()


def test_a_run_dir_removed_under_a_running_daemon_is_made_again_with_its_lock_and_links(tmp_path):
    """Reproduces: removing the run directory while a daemon ran went unnoticed: its pty links
    were gone and a second daemon could take the directory over."""
    run = tmp_path / "run"
    bench = write_bench(tmp_path, run)
    path = tmp_path / "bench.toml"
    path.write_text(path.read_text().replace('"pty://gps"]', '"pty://gps", "pty://sub/gps"]'))
    daemon = Daemon(bench, tmp=tmp_path)
    try:
        targets = {name: os.readlink(run / name) for name in ("gps", "sub/gps")}
        subprocess.run(["rm", "-rf", str(run)], check=True)  # as a user's cleanup would
        deadline = time.monotonic() + 10.0
        while not daemon.events("rundir.recreated") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert daemon.events("rundir.removed"), daemon.stderr()
        recreated = daemon.events("rundir.recreated")
        assert recreated and recreated[0]["path"] == str(run), daemon.stderr()
        st = os.lstat(run)
        assert stat.S_ISDIR(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o755
        assert (run / LOCK_NAME).read_text() == f"{daemon.proc.pid}\n"
        for name, target in targets.items():
            assert os.readlink(run / name) == target  # the same live ptys
        second = hild_run(bench)  # the lock is held again: a second daemon still refuses
        assert second.returncode == 2 and f"PID {daemon.proc.pid}" in second.stderr, second
        client = PtyClient(run / "gps").start()
        try:
            deadline = time.monotonic() + 3.0
            while not client.sentences("GGA") and time.monotonic() < deadline:
                time.sleep(0.05)
            assert client.sentences("GGA"), "the recreated link should lead to the live pty"
        finally:
            client.close()
    finally:
        summary = daemon.stop()
    assert summary["reason"] == "SIGTERM"
    assert not (run / "gps").exists() and not (run / LOCK_NAME).exists()


def test_a_removed_lock_file_is_made_again_and_locked(tmp_path):
    run = tmp_path / "run"
    with RunDir(run, watch_interval_s=3600.0) as held:  # checked by hand below
        assert not held.keep()  # nothing to do while all is in place
        (run / LOCK_NAME).unlink()
        with RunDir(run, watch_interval_s=3600.0):  # the lock was lost: another could hold it
            pass
        assert not (run / LOCK_NAME).exists()
        assert held.keep()
        assert (run / LOCK_NAME).read_text() == f"{os.getpid()}\n"
        with pytest.raises(RunDirError, match="in use by another hild"):
            RunDir(run).acquire()

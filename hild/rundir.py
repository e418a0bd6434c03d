"""The run directory (/tmp/hild by default): where the pty links live, held by one daemon.

A daemon whose bench has pty:// ports under its run directory holds the directory for the
whole run (``RunDir``):

- the directory is created with mode 0755 when missing; an existing one must be a real
  directory (not a symlink), owned by the user running hild, and writable by nobody else;
  anything else is refused with a message naming the path, its owner and mode;
- ``.lock`` in it is locked (flock) and holds the daemon's PID: a second daemon on the same
  directory refuses to start, naming the first one's PID, and leaves its links alone;
- once locked, the links into /dev/pts/ left in it by a daemon that died without cleaning up
  are removed (no live daemon can own them: it would hold the lock). Nothing else is touched;
- its parent must be as safe as the directory: this user's or root's, and writable by nobody
  else unless sticky (as /tmp is), since whoever can write the parent can replace the
  directory;
- while held it is watched (every ``WATCH_INTERVAL_S``): a directory removed or replaced under
  the run, or its lock file removed, is logged and made again, with the lock and the pty
  links this process made in it.

The pty port's link policy is here too: a link is replaced only when it is dangling or points
into /dev/pts/, atomically, and removed at exit only if it still points at the port's pty.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import pwd
import signal
import stat
import threading

import structlog

from hild.config import ConfigError
from hild.threads import name_os_thread

DEFAULT_RUN_DIR = "/tmp/hild"  # where pty://NAME links go unless a bench or --run-dir says
RUN_DIR_EXPECTED = f"a directory for the pty links, e.g. {DEFAULT_RUN_DIR}"


def usable_run_dir_name(text: str) -> bool:
    """Whether ``text`` can name a run directory at all (not blank, no NUL byte)."""
    return bool(text.strip()) and "\0" not in text


# The signals on which a process holding a run directory (hild run, hild replay) stops
# cleanly, its links removed: SIGHUP (a closed terminal) would otherwise leave them behind.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

log = structlog.get_logger("hild.rundir")

LOCK_NAME = ".lock"
PTS_DIR = "/dev/pts/"
# 0755, not 0700: a controller run by another user must be able to look the links up (whether
# it may then open the pty is the pty's own mode and group); only this user can create,
# replace or remove links in it, so nobody else can point /tmp/hild/jets at their own pty.
DIR_MODE = 0o755
ELSEWHERE = "give the run another directory with --run-dir DIR (or run_dir in the bench)"


class RunDirError(ConfigError):
    """A run directory that cannot be used; the message says why and what to do.

    A ConfigError, so `hild run` reports it in one line without a traceback and exits with 2.
    """

    def __init__(self, path: str | os.PathLike, problem: str, remedy: str = ELSEWHERE):
        ValueError.__init__(self, f"run directory {os.fspath(path)} {problem}; {remedy}")
        self.file = os.fspath(path)
        self.key = "run_dir"
        self.value = os.fspath(path)
        self.expected = remedy
        self.problem = problem


def owner_name(uid: int) -> str:
    """The user name of uid, or the number when it has none."""
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def describe_stat(st: os.stat_result) -> str:
    """``owner alice, mode 0755 = drwxr-xr-x`` for a message."""
    mode = stat.S_IMODE(st.st_mode)
    return f"owner {owner_name(st.st_uid)}, mode {mode:04o} = {stat.filemode(st.st_mode)}"


def check_private_dir(path: str, st: os.stat_result) -> None:
    """Refuse a directory (from lstat) that is a symlink, not ours, or writable by others."""
    me = os.geteuid()
    if stat.S_ISLNK(st.st_mode):
        try:
            target = os.readlink(path)
        except OSError:
            target = "?"
        raise RunDirError(
            path,
            f"is a symlink (to {target}; {describe_stat(st)}): hild puts "
            "its links only in a real directory",
            f"remove the symlink, or {ELSEWHERE}",
        )
    if not stat.S_ISDIR(st.st_mode):
        raise RunDirError(path, f"is not a directory ({describe_stat(st)})")
    if st.st_uid != me:
        raise RunDirError(
            path,
            f"belongs to another user ({describe_stat(st)}), not to "
            f"{owner_name(me)} who runs hild: that user could replace the pty "
            "links in it",
        )
    if stat.S_IMODE(st.st_mode) & (stat.S_IWGRP | stat.S_IWOTH):
        raise RunDirError(
            path,
            f"is writable by others ({describe_stat(st)}), who could replace the pty links in it",
            f"make it private (chmod 755 {path}), remove it, or {ELSEWHERE}",
        )


def check_parent(path: str) -> None:
    """Refuse a directory whose parent lets another user replace it: the parent (symlinks
    followed: the directory the entry is in) must belong to this user or root and be writable
    by nobody else unless it is sticky, where only an entry's owner may rename or remove it."""
    parent = os.path.dirname(path) or "."
    try:
        st = os.stat(parent)
    except OSError as e:
        raise RunDirError(
            path, f"is in {parent}, which cannot be examined ({e.strerror or e})"
        ) from None
    why = "who could replace the run directory and the pty links in it"
    if st.st_uid not in (os.geteuid(), 0):
        raise RunDirError(
            path, f"is in {parent}, which belongs to another user ({describe_stat(st)}), {why}"
        )
    mode = stat.S_IMODE(st.st_mode)
    if mode & (stat.S_IWGRP | stat.S_IWOTH) and not mode & stat.S_ISVTX:
        raise RunDirError(
            path,
            f"is in {parent}, which others can write and which is not "
            f"sticky ({describe_stat(st)}): they could replace the run directory "
            "and the pty links in it",
            f"make it sticky (chmod +t {parent}) or private (chmod go-w {parent}), or {ELSEWHERE}",
        )


def make_private_dir(path: str) -> None:
    """Create path (and missing parents) if needed and check it and its parent."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        parent = os.path.dirname(path)
        try:
            if parent:
                os.makedirs(parent, DIR_MODE, exist_ok=True)
            check_parent(path)
            os.mkdir(path, DIR_MODE)
            os.chmod(path, DIR_MODE, follow_symlinks=False)  # whatever the umask said
        except FileExistsError:
            pass  # made meanwhile: checked below like any existing directory
        except OSError as e:
            raise RunDirError(path, f"cannot be created ({e.strerror or e})") from None
        st = os.lstat(path)
    except OSError as e:
        raise RunDirError(path, f"cannot be examined ({e.strerror or e})") from None
    check_parent(path)
    check_private_dir(path, st)


WATCH_INTERVAL_S = 1.0  # how soon a removed run directory is noticed and made again


class RunDir:
    """Hold a run directory for one run: checked, locked, cleaned of stale links, watched.

    ``with RunDir(path):`` around the run; a second holder of the same directory (another
    process) gets a RunDirError naming the first one's PID. While held, a thread checks every
    ``watch_interval_s`` that the directory and its lock file are still the ones held, and
    makes them again (with this process's pty links) when they are not.
    """

    def __init__(
        self, path: str | os.PathLike = DEFAULT_RUN_DIR, watch_interval_s: float = WATCH_INTERVAL_S
    ):
        self.path = os.path.abspath(os.fspath(path))
        self.watch_interval_s = watch_interval_s
        self._dir_fd: int | None = None
        self._lock_fd: int | None = None
        self._mutex = threading.Lock()  # the watcher and release() both change the fds
        self._stop = threading.Event()
        self._watcher: threading.Thread | None = None
        self._problem = ""  # the last reason the directory could not be made again (logged once)

    def __enter__(self) -> RunDir:
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()

    def acquire(self) -> None:
        """Create or check the directory, take its lock, remove stale pty links, watch it."""
        self._dir_fd, self._lock_fd = self._take()
        log.debug("rundir.locked", path=self.path, pid=os.getpid())
        remove_stale_links(self.path)
        self._stop.clear()
        self._watcher = threading.Thread(target=self._watch, name="hild-rundir", daemon=True)
        self._watcher.start()

    def _take(self) -> tuple[int, int]:
        """Make or check the directory, open it, lock it with our PID: (dir fd, lock fd)."""
        make_private_dir(self.path)
        flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            dir_fd = os.open(self.path, flags)
        except OSError as e:  # replaced by a symlink since it was checked
            raise RunDirError(self.path, f"cannot be opened ({e.strerror or e})") from None
        try:
            check_private_dir(self.path, os.fstat(dir_fd))
            lock_fd = self._lock(dir_fd)
        except BaseException:
            os.close(dir_fd)
            raise
        pid = f"{os.getpid()}\n".encode()
        os.pwrite(lock_fd, pid, 0)
        os.ftruncate(lock_fd, len(pid))
        return dir_fd, lock_fd

    def _lock(self, dir_fd: int) -> int:
        """Lock .lock in the directory; retry when it was removed by a holder that just left."""
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
        for _ in range(10):
            try:
                fd = os.open(LOCK_NAME, flags, 0o644, dir_fd=dir_fd)
            except OSError as e:
                lock = os.path.join(self.path, LOCK_NAME)
                raise RunDirError(
                    self.path, f"has a lock file {lock} that cannot be opened ({e.strerror or e})"
                ) from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as e:
                holder = _read_pid(fd)
                os.close(fd)
                if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                    raise RunDirError(self.path, f"cannot be locked ({e.strerror or e})") from None
                who = "another hild" if holder is None else f"another hild (PID {holder})"
                raise RunDirError(
                    self.path,
                    f"is in use by {who}, whose pty links are in it",
                    f"stop that one first, or {ELSEWHERE}",
                ) from None
            if self._lock_is(dir_fd, fd):
                return fd
            os.close(fd)  # the holder removed that file as it left: lock the new one
        raise RunDirError(self.path, "has a lock file that keeps changing under us")

    @staticmethod
    def _lock_is(dir_fd: int, lock_fd: int) -> bool:
        """Whether the directory's .lock is the file locked through lock_fd."""
        try:
            current = os.stat(LOCK_NAME, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            return False
        return os.path.samestat(current, os.fstat(lock_fd))

    def _watch(self) -> None:
        name_os_thread("hild-rundir")
        while not self._stop.wait(self.watch_interval_s):
            try:
                self.keep()
            except Exception as e:  # the run goes on; the watcher tries again next time
                log.error("rundir.watch_failed", path=self.path, error=str(e))

    def keep(self) -> bool:
        """Make the directory, its lock and this process's pty links in it again if the
        directory was removed or replaced, or the lock file removed; True if it did."""
        with self._mutex:
            if self._dir_fd is None or self._lock_fd is None:
                return False
            try:
                current = os.stat(self.path, follow_symlinks=False)
            except FileNotFoundError:
                current = None
            if current is not None and os.path.samestat(current, os.fstat(self._dir_fd)):
                if self._lock_is(self._dir_fd, self._lock_fd):
                    return False
                what = "lock file"
            else:
                what = "directory"
            if not self._problem:
                log.warning(
                    "rundir.removed",
                    path=self.path,
                    what=what,
                    replaced=what == "directory" and current is not None,
                )
            try:
                dir_fd, lock_fd = self._take()
            except RunDirError as e:  # someone else's now, or held by another hild: say so once
                if str(e) != self._problem:
                    log.error("rundir.not_recreated", path=self.path, error=str(e))
                    self._problem = str(e)
                return False
            self._problem = ""
            os.close(self._lock_fd)
            os.close(self._dir_fd)
            self._dir_fd, self._lock_fd = dir_fd, lock_fd
            links = restore_links(self.path)
            log.warning("rundir.recreated", path=self.path, what=what, pid=os.getpid(), links=links)
            return True

    def release(self) -> None:
        """Stop watching, remove the lock file and let the lock go; idempotent."""
        self._stop.set()
        if self._watcher is not None and self._watcher is not threading.current_thread():
            self._watcher.join()
            self._watcher = None
        with self._mutex:
            if self._lock_fd is not None:
                if self._dir_fd is not None and self._lock_is(self._dir_fd, self._lock_fd):
                    with contextlib.suppress(OSError):
                        os.unlink(LOCK_NAME, dir_fd=self._dir_fd)
                os.close(self._lock_fd)
                self._lock_fd = None
            if self._dir_fd is not None:
                os.close(self._dir_fd)
                self._dir_fd = None


def _read_pid(fd: int) -> int | None:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def link_target(path: str) -> str | None:
    """Where the symlink at path points, as an absolute normalised path; None if no symlink."""
    try:
        target = os.readlink(path)
    except OSError:
        return None
    return os.path.normpath(os.path.join(os.path.dirname(path), target))


def points_into_pts(target: str | None) -> bool:
    """True for a link target under /dev/pts/ (a pty slave, live or gone)."""
    return target is not None and target.startswith(PTS_DIR)


def remove_stale_links(root: str) -> list[str]:
    """Remove every symlink into /dev/pts/ under root (held, so no live daemon owns them).

    Only symlinks are looked at, and only those into /dev/pts/ removed; subdirectories (from
    pty:// names with '/') are searched, symlinked ones are not followed. Returns the paths
    removed.
    """
    removed: list[str] = []
    pending = [root]
    while pending:
        folder = pending.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                pending.append(entry.path)
                continue
            if not entry.is_symlink():
                continue
            target = link_target(entry.path)
            if not points_into_pts(target):
                continue
            with contextlib.suppress(FileNotFoundError):
                os.unlink(entry.path)
                removed.append(entry.path)
                log.info(
                    "rundir.stale_link_removed",
                    path=entry.path,
                    target=target,
                    target_exists=target is not None and os.path.exists(target),
                )
    return removed


def make_link_dir(path: str) -> None:
    """Create the directory a pty link goes in, when missing (mode 0755)."""
    parent = os.path.dirname(path)
    if parent and not os.path.isdir(parent):
        os.makedirs(parent, DIR_MODE, exist_ok=True)


def check_replaceable(path: str) -> None:
    """Refuse to put a pty link where something is that is not a dangling or pty link.

    A regular file or directory is never replaced; nor is a symlink that resolves to something
    outside /dev/pts/ (a udev link such as /dev/gps -> ttyUSB0, a user's file), since replacing
    it would silently take over what it names.
    """
    if not os.path.lexists(path):
        return
    if not os.path.islink(path):
        kind = "a directory" if os.path.isdir(path) else "a file that is not a symlink"
        raise FileExistsError(
            errno.EEXIST,
            f"refusing to replace {kind} with the pty link; remove it or choose another pty name",
            path,
        )
    target = link_target(path)
    if points_into_pts(target) or not os.path.exists(path):
        return
    raise FileExistsError(
        errno.EEXIST,
        f"refusing to replace the symlink to {target} with the pty link: hild replaces only "
        "dangling links and links into /dev/pts/; remove it or choose another pty path",
        path,
    )


# The pty links this process made and has not removed (link path -> its pty), so that a run
# directory removed under the run can be made again with them (RunDir.keep).
_own_links: dict[str, str] = {}
_own_links_mutex = threading.Lock()


def restore_links(root: str) -> list[str]:
    """Make again the links this process made under root whose pty is still there and whose
    place is free; returns their paths."""
    with _own_links_mutex:
        links = [(p, t) for p, t in _own_links.items() if p.startswith(root + os.sep)]
    restored = []
    for path, target in links:
        if not os.path.exists(target) or os.path.lexists(path):
            continue
        try:
            make_link_dir(path)
            os.symlink(target, path)
        except OSError as e:
            log.error("rundir.link_not_restored", path=path, target=target, error=str(e))
            continue
        restored.append(path)
    return restored


def replace_symlink(path: str, target: str) -> None:
    """Point path at target atomically, replacing a stale link left by an earlier run."""
    old = link_target(path)
    tmp = f"{path}.{os.getpid()}.tmp"
    if os.path.lexists(tmp):
        os.unlink(tmp)
    os.symlink(target, tmp)
    try:
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
    with _own_links_mutex:
        _own_links[path] = target
    if old is not None and old != target:
        log.info("pty.link_replaced", path=path, old_target=old, target=target)


def remove_own_symlink(path: str, target: str) -> None:
    """Remove the link if it still points at our pty (another run may have replaced it)."""
    with _own_links_mutex:
        if _own_links.get(path) == target:
            del _own_links[path]
    try:
        if os.readlink(path) == target:
            os.unlink(path)
    except OSError:
        pass


def pty_paths_under(specs, run_dir: str | os.PathLike) -> list[str]:
    """The pty link paths among specs (PortSpecs) that lie under run_dir."""
    root = os.path.abspath(os.fspath(run_dir))
    return [
        spec.path
        for spec in specs
        if spec.scheme == "pty"
        and spec.path is not None
        and os.path.commonpath([root, os.path.abspath(spec.path)]) == root
    ]

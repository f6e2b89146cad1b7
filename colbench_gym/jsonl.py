"""Writing files so that nothing is lost: whole-file writes are atomic (JSONL, text, bytes), and
journals are append-only JSON lines, each one on disk before the next step starts.

A reader never sees half a file: the content goes to a temporary file in the same directory
(a fresh name opened exclusively, so a planted symlink is never written through), which is
fsync'd and then renamed over the target. A journal (:class:`Journal`, :func:`read_journal`: a
long stage's finished steps, so a killed run resumes) is the other shape: one line per step,
flushed and fsync'd as it is appended; read back, a torn last line is cut off, a damaged middle
refused. This module is the one place for both rules; every package, script and benchmark
imports it (the trajectory writer, :class:`sweet_agent.trajectories.TrajectoryWriter`, keeps
its own append path: it locks the file, validates records and replays failed episodes). Readers live beside the record shapes
(:func:`colbench_gym.tasks.iter_jsonl`, :func:`sweet_agent.trajectories.iter_trajectories`).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import IO, Any


def jsonl_line(record: Mapping[str, Any]) -> str:
    """One JSONL line (without its newline) that always encodes as UTF-8: readable text as it is,
    and a record holding a lone surrogate (a valid Python ``str``, not valid UTF-8) with ``\\uXXXX``
    escapes, which ``json.loads`` reads back to the same string."""
    line = json.dumps(record, ensure_ascii=False)
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:
        line = json.dumps(record)
    return line


def write_jsonl_atomic(path: str | os.PathLike[str], records: Iterable[Mapping[str, Any]]) -> Path:
    """Write ``records`` as JSONL to ``path`` atomically (temp file, fsync, ``os.replace``)."""
    return write_text_atomic(path, (jsonl_line(record) + "\n" for record in records))


def write_text_atomic(path: str | os.PathLike[str], text: str | Iterable[str], *, mode: int | None = None) -> Path:
    """Write ``text`` (one string, or pieces streamed in order) to ``path`` atomically, as UTF-8:
    a temporary file in the same folder, fsync'd, then renamed over ``path``. ``mode``: the
    file's permissions (default: what a plain ``open()`` gives under the umask)."""
    def write(fh: IO[Any]) -> None:
        for piece in [text] if isinstance(text, str) else text:
            fh.write(piece)
    return _replace_atomically(path, write, binary=False, mode=mode)


def write_bytes_atomic(path: str | os.PathLike[str], data: bytes, *, mode: int | None = None) -> Path:
    """Write ``data`` to ``path`` atomically: the same rule as :func:`write_text_atomic`."""
    return _replace_atomically(path, lambda fh: fh.write(data), binary=True, mode=mode)


def _replace_atomically(path: str | os.PathLike[str], write: Callable[[IO[Any]], object], *, binary: bool,
                        mode: int | None) -> Path:
    """Create ``path``'s folder, let ``write`` fill a fresh temporary file there, fsync it, give it
    ``mode`` or else the mode a plain ``open()`` would (``mkstemp`` makes 0600, which would hide a
    shared result from its group; where the umask cannot be read, or the file system refuses a
    chmod, 0600 stays) and rename it over ``path``; on any failure the temporary file goes."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8") as fh:
            if mode is None and (umask := _umask()) is not None:
                mode = 0o666 & ~umask
            if mode is not None:
                with contextlib.suppress(OSError):
                    os.fchmod(fh.fileno(), mode)
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


class JournalDamaged(ValueError):
    """A journal with an unreadable line that is not its last: not a killed write (which only
    tears the end), so nothing after it is trusted or cut; the caller refuses to resume.
    ``pos``: the byte offset of that line."""

    def __init__(self, message: str, pos: int):
        super().__init__(message)
        self.pos = pos


def scan_journal(data: bytes, parse: Callable[[bytes], Any] = json.loads,
                 bad: tuple[type[BaseException], ...] = (json.JSONDecodeError, UnicodeDecodeError),
                 ) -> tuple[list[tuple[int, int, Any]], int]:
    """The whole lines of a journal's bytes, parsed: ``([(start, end, record), ...], good_end)``,
    blank lines skipped, ``good_end`` the end of the last good line. A torn last line (no newline)
    or an unreadable one (``parse`` raised one of ``bad``) ends the scan; an unreadable line with
    anything but blanks after it raises :class:`JournalDamaged`."""
    entries: list[tuple[int, int, Any]] = []
    good_end = pos = 0
    while pos < len(data):
        nl = data.find(b"\n", pos)
        if nl < 0:
            break  # torn: no newline at the end
        line = data[pos:nl]
        if line.strip():
            try:
                entries.append((pos, nl + 1, parse(line)))
            except bad:
                if data[nl + 1:].strip():
                    raise JournalDamaged(f"the line at byte {pos} is unreadable and is not the last line; the file is "
                                         "damaged in the middle (two writers, or an edit)", pos) from None
                break  # a bad final line is a torn write
        good_end = pos = nl + 1
    return entries, good_end


def read_journal(path: str | os.PathLike[str]) -> list[Any]:
    """The records of the append-only journal at ``path``, in order (:func:`scan_journal`). A torn
    or unreadable *last* line (the process was killed while writing it) is cut from the file, so
    the next append starts on a line boundary; an unreadable line with records after it raises
    :class:`JournalDamaged` naming the file, and changes nothing. A missing file: ``[]``."""
    path = Path(path)
    if not path.exists():
        return []
    data = path.read_bytes()
    try:
        entries, good_end = scan_journal(data)
    except JournalDamaged as exc:
        raise JournalDamaged(f"{path}: {exc}: move it aside to start over, or mend that line", exc.pos) from None
    if good_end < len(data):
        with open(path, "r+b") as fh:
            fh.truncate(good_end)
            fh.flush()
            os.fsync(fh.fileno())
    return [record for _, _, record in entries]


class Journal:
    """An append-only JSON-lines file: :meth:`append` writes one line and returns only once it is
    flushed and fsync'd, so a killed process loses at most the line it was writing (which
    :func:`read_journal` cuts off). ``header``: start the file afresh with this first line
    (a file already there is replaced); without it, append to what is there (created if absent)."""

    def __init__(self, path: str | os.PathLike[str], *, header: Mapping[str, Any] | None = None):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if header is not None:
            with open(self.path, "w", encoding="utf-8") as fh:
                self._write(fh, header)
        self._fh = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - closed by close()

    @staticmethod
    def _write(fh: IO[str], record: Mapping[str, Any]) -> None:
        fh.write(jsonl_line(record) + "\n")
        fh.flush()
        os.fsync(fh.fileno())

    def append(self, record: Mapping[str, Any]) -> None:
        self._write(self._fh, record)

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.close()


def _umask() -> int | None:
    """The process's umask, read without changing it (``os.umask`` sets it, racing other
    threads): Linux reports it in /proc/self/status; ``None`` where it cannot be read."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return None


class OutputNotWritable(ValueError):
    """An output path that cannot be written; raised before any model call or grading."""


def check_output_writable(path: str | os.PathLike[str], flag: str = "--output") -> None:
    """Fail early, naming ``flag`` and the path, if ``path`` cannot be written: its folder is
    missing and cannot be created, is read-only or is a file, or ``path`` is a folder."""
    path = Path(path)
    parent = path.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputNotWritable(f"{flag} {path}: cannot create its folder {parent} ({exc.strerror or exc}); "
                                f"pick a writable {flag}") from None
    if path.is_dir():
        raise OutputNotWritable(f"{flag} {path} is a folder; give a file name inside it")
    if path.exists() and not os.access(path, os.W_OK):
        raise OutputNotWritable(f"{flag} {path} is not writable; fix its permissions or pick another {flag}")
    try:
        fd, probe = tempfile.mkstemp(dir=parent, prefix=f".{path.name}.", suffix=".write-test")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise OutputNotWritable(f"{flag} {path}: cannot write in {parent} ({exc.strerror or exc}); "
                                f"pick a writable {flag}") from None

"""Whole-file writes have one home (:mod:`colbench_gym.jsonl`): a reader never sees half a file,
a failed write keeps the previous file, a planted symlink is replaced and never written through,
and the file gets the mode a plain ``open()`` gives (``mkstemp`` alone would make it 0600)."""

from __future__ import annotations

import os

import pytest

from colbench_gym.jsonl import write_bytes_atomic, write_jsonl_atomic, write_text_atomic


def _mode(path) -> int:
    return path.stat().st_mode & 0o777


@pytest.mark.parametrize("umask", [0o022, 0o077])
def test_mode_is_what_open_gives_under_the_umask(tmp_path, umask):
    old = os.umask(umask)
    try:
        plain = tmp_path / "plain"
        plain.write_bytes(b"x")
        write_bytes_atomic(tmp_path / "b", b"\x00\xff")
        write_text_atomic(tmp_path / "t", "é")
    finally:
        os.umask(old)
    assert _mode(tmp_path / "b") == _mode(tmp_path / "t") == _mode(plain) == 0o666 & ~umask


def test_bytes_and_text_round_trip_and_replace(tmp_path):
    path = tmp_path / "deep" / "folder" / "f.bin"  # missing folders are created
    write_bytes_atomic(path, b"old")
    write_bytes_atomic(path, b"\x00new\xff")
    assert path.read_bytes() == b"\x00new\xff"
    write_text_atomic(path, iter(["a", "é", "\n"]))  # streamed pieces, UTF-8
    assert path.read_bytes() == "aé\n".encode()
    assert sorted(p.name for p in path.parent.iterdir()) == ["f.bin"]  # no temporary file left


def test_a_failed_write_keeps_the_previous_file_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "rows.jsonl"
    write_jsonl_atomic(path, [{"a": 1}])

    def rows():
        yield {"a": 2}
        raise RuntimeError("the producer failed half-way")

    with pytest.raises(RuntimeError, match="half-way"):
        write_jsonl_atomic(path, rows())
    assert path.read_text() == '{"a": 1}\n'
    assert [p.name for p in tmp_path.iterdir()] == ["rows.jsonl"]


def test_a_planted_symlink_is_replaced_not_written_through(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    link = tmp_path / "out.json"
    link.symlink_to(victim)
    write_bytes_atomic(link, b"{}")
    assert not link.is_symlink() and link.read_bytes() == b"{}"
    assert victim.read_text() == "keep me"


def test_an_explicit_mode_wins_and_an_unreadable_umask_keeps_0600(tmp_path, monkeypatch):
    from colbench_gym import jsonl

    write_text_atomic(tmp_path / "secret", "x", mode=0o600)
    write_bytes_atomic(tmp_path / "shared", b"x", mode=0o640)
    assert _mode(tmp_path / "secret") == 0o600 and _mode(tmp_path / "shared") == 0o640
    monkeypatch.setattr(jsonl, "_umask", lambda: None)  # no /proc: never more open than asked
    write_text_atomic(tmp_path / "guess", "x")
    assert _mode(tmp_path / "guess") == 0o600

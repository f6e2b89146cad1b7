"""Append-only journals have one home (:mod:`colbench_gym.jsonl`): every appended line is on disk
when ``append`` returns, a line torn by a killed process is cut off when the journal is read back
(and the next append starts on a line boundary), and a header starts a journal afresh. The
step-pair, Monte-Carlo and critic-report journals all use it."""

from __future__ import annotations

import json
import os

from colbench_gym.jsonl import Journal, read_journal


def test_appends_are_on_disk_line_by_line_and_read_back_in_order(tmp_path, monkeypatch):
    synced = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd)))
    path = tmp_path / "sub" / "j.jsonl"
    j = Journal(path, header={"format": 1})
    j.append({"turn": 1, "text": "é"})
    assert read_journal(path) == [{"format": 1}, {"turn": 1, "text": "é"}]  # readable before close
    j.append({"turn": 2})
    j.close()
    assert len(synced) == 3  # the header and each append
    assert read_journal(path) == [{"format": 1}, {"turn": 1, "text": "é"}, {"turn": 2}]


def test_a_torn_last_line_is_cut_and_the_next_append_starts_a_line(tmp_path):
    path = tmp_path / "j.jsonl"
    path.write_bytes(b'{"turn": 1}\n{"turn": 2, "sco')  # killed while writing turn 2
    assert read_journal(path) == [{"turn": 1}]
    assert path.read_bytes() == b'{"turn": 1}\n'
    j = Journal(path)  # no header: continue the file
    j.append({"turn": 2})
    j.close()
    assert [json.loads(x) for x in path.read_text().splitlines()] == [{"turn": 1}, {"turn": 2}]


def test_an_unreadable_line_ends_the_journal_there(tmp_path):
    path = tmp_path / "j.jsonl"
    path.write_bytes(b'{"turn": 1}\nnot json\n{"turn": 3}\n')
    assert read_journal(path) == [{"turn": 1}]
    assert path.read_bytes() == b'{"turn": 1}\n'


def test_a_header_starts_afresh_and_a_missing_journal_reads_empty(tmp_path):
    path = tmp_path / "j.jsonl"
    assert read_journal(path) == [] and not path.exists()
    path.write_text('{"old": true}\n')
    Journal(path, header={"format": 2}).close()
    assert read_journal(path) == [{"format": 2}]

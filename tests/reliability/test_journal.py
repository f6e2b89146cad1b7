"""Append-only journals have one home (:mod:`colbench_gym.jsonl`): every appended line is on disk
when ``append`` returns, a line torn by a killed process is cut off when the journal is read back
(and the next append starts on a line boundary), an unreadable line in the middle is refused
rather than cut, and a header starts a journal afresh. The
step-pair, Monte-Carlo and critic-report journals all use it."""

from __future__ import annotations

import json
import os

import pytest

from colbench_gym.jsonl import Journal, JournalDamaged, read_journal


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


def test_a_damaged_middle_is_refused_and_nothing_is_cut(tmp_path):
    """Only a killed write's last line is cut; an unreadable line with records after it (two
    writers, an edit) is refused, so no good record after it is lost."""
    path = tmp_path / "j.jsonl"
    damaged = b'{"turn": 1}\n{"turn": 2, "sco{"turn": 3}\n{"turn": 4}\n'
    path.write_bytes(damaged)
    with pytest.raises(JournalDamaged, match="byte 12 is unreadable and is not the last line"):
        read_journal(path)
    assert path.read_bytes() == damaged
    path.write_bytes(b'{"turn": 1}\n\n{"turn": 2}\nnot json\n')  # blank lines skipped; a bad last line cut
    assert read_journal(path) == [{"turn": 1}, {"turn": 2}]
    assert path.read_bytes() == b'{"turn": 1}\n\n{"turn": 2}\n'


def test_each_journal_refuses_a_damaged_middle_in_one_line(tmp_path):
    from sweet_agent.actor import critic_report, mc_values, pair_files

    path = tmp_path / "j.jsonl"
    path.write_bytes(b'{"format": 1}\n{"tur\n{"turn": 4}\n')
    with pytest.raises(pair_files.PairFileError, match="^--resume: .*damaged in the middle"):
        pair_files.TurnJournal(path, {}, pair_files.Shard(0, 1), resume=True)
    with pytest.raises(mc_values.MCValuesError, match="^--resume: .*damaged in the middle"):
        mc_values.values_journal(path, {}, resume=True)
    with pytest.raises(JournalDamaged):
        critic_report.ScoresJournal(path)


def test_a_header_starts_afresh_and_a_missing_journal_reads_empty(tmp_path):
    path = tmp_path / "j.jsonl"
    assert read_journal(path) == [] and not path.exists()
    path.write_text('{"old": true}\n')
    Journal(path, header={"format": 2}).close()
    assert read_journal(path) == [{"format": 2}]

"""Interrupted training: a checkpoint torn by a kill during saving (no trainer_state.json, which
the Trainer writes last) is never picked by --resume_from_checkpoint last; the previous finished
one is."""

from __future__ import annotations

import json

from sweet_agent.training.saving import last_checkpoint


def test_resume_skips_a_checkpoint_torn_by_a_kill(tmp_path):
    assert last_checkpoint(str(tmp_path / "missing")) is None
    for step, complete in ((2, True), (10, True), (12, False)):
        ckpt = tmp_path / f"checkpoint-{step}"
        ckpt.mkdir()
        (ckpt / "model.safetensors").write_bytes(b"weights")
        if complete:
            (ckpt / "trainer_state.json").write_text(json.dumps({"global_step": step}))
    (tmp_path / "checkpoint-99.tmp").mkdir()  # not a checkpoint name
    assert last_checkpoint(str(tmp_path)) == str(tmp_path / "checkpoint-10")  # numeric order, torn 12 skipped

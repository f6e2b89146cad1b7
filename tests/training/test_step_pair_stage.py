"""The step-pair stage at scale: candidates from any policy backend (the local model, or an
OpenAI-compatible server: a real HTTP server on 127.0.0.1 answering ``n`` choices), failed
turns reported and resumed, shards that partition the turns and merge into the unsharded file,
a resumed stage equal to an uninterrupted one, and merges of mismatched shards refused."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from sweet_agent.actor import pair_files as PF
from sweet_agent.actor.candidates import build_step_pairs, local_policy, stage_turns
from sweet_agent.actor.config import StepPairConfig
from sweet_agent.policies.openai_policy import OpenAIPolicy

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from local_openai_server import LocalOpenAIServer  # noqa: E402

CANDIDATES = ["What should f return for 0?", "I WANT TO ANSWER: def f(x):\n    return x + 1",
              "Which plan names are there?", "no"]


def _responder(body: dict) -> str:
    """A server 'model': choice j (or the request's seed, for single requests) picks a text."""
    j = body.get("choice", body.get("seed", 0))
    return CANDIDATES[int(j) % len(CANDIDATES)]


def _config(**kw) -> StepPairConfig:
    return StepPairConfig(**{"num_candidates": 4, "pairs_per_turn": 2, "max_new_tokens": 6, **kw})


@pytest.fixture
def policy(tiny_tokenizer):
    from tiny_model import build_tiny_model

    return build_tiny_model(tiny_tokenizer, seed=2)


def _endpoint(server: LocalOpenAIServer, **kw) -> OpenAIPolicy:
    return OpenAIPolicy("test-model", base_url=server.base_url, api_key="x", **{"max_retries": 2, "timeout": 10, **kw})


# ----------------------------------------------------------------------------- candidate backends
def test_server_candidates_one_request_per_turn_recorded_scored_paired(tiny_critic, toy_records, tmp_path):
    stats: dict = {}
    out = tmp_path / "pairs.jsonl"
    with LocalOpenAIServer(_responder) as server:
        rows = build_step_pairs(toy_records[:2], None, None, tiny_critic, _config(), seed=0, stats=stats,
                                candidates=_endpoint(server), pairs_out=out)
    turns = stats["turns"]
    assert turns == 4 and stats["candidates"] == 16 and stats["failed_turns"] == 0
    assert len(server.requests) == turns  # one request per turn ...
    assert all(r["body"]["n"] == 4 for r in server.requests)  # ... for all its candidates
    assert rows and all(r["candidates_from"] == "openai:test-model" for r in rows)
    for row in rows:  # scored by the critic, chosen from the top half, rejected from the bottom
        assert row["chosen_score"] > row["rejected_score"]
        assert {row["chosen"][0]["content"], row["rejected"][0]["content"]} <= set(CANDIDATES)
    assert [json.loads(x) for x in out.read_text().splitlines()] == rows
    meta = PF.read_pair_meta(out)
    assert meta["settings"]["candidates_from"] == "openai:test-model"
    assert meta["candidates"]["base_url"] == server.base_url and meta["candidates"]["n_per_request"] is True
    assert meta["counts"]["pairs"] == len(rows) and not PF.journal_path(out).exists()


def test_a_server_that_ignores_n_gets_concurrent_single_requests(tiny_critic, toy_records):
    with LocalOpenAIServer(_responder, honour_n=False) as server:
        endpoint = _endpoint(server)
        rows = build_step_pairs(toy_records[:1], None, None, tiny_critic, _config(), seed=0, candidates=endpoint,
                                turns_in_flight=1)  # one turn at a time: the second knows what the first learnt
    ns = [r["body"].get("n") for r in server.requests]
    assert ns[0] == 4 and endpoint.supports_n is False  # asked once for n, got one choice ...
    assert len(ns) == 1 + 3 + 4 and ns[1:] == [None] * 7  # ... the rest and the next turn one request each
    seeds = [r["body"]["seed"] for r in server.requests[4:]]
    assert len(set(seeds)) == 4  # each single request its own seed
    assert rows


def test_server_errors_are_retried(tiny_critic, toy_records):
    stats: dict = {}
    with LocalOpenAIServer(_responder, fail_first=2, fail_status=503) as server:
        rows = build_step_pairs(toy_records[:1], None, None, tiny_critic, _config(), seed=0, stats=stats,
                                candidates=_endpoint(server), turns_in_flight=1)
    assert stats["failed_turns"] == 0 and stats["turns"] == 2 and rows
    assert len(server.requests) == 2 + 2  # two failures, retried, then one request per turn


def test_a_turn_that_still_fails_is_reported_counted_and_resumed(tiny_critic, toy_records, tmp_path, capsys):
    out = tmp_path / "pairs.jsonl"
    stats: dict = {}
    with LocalOpenAIServer(_responder, fail_first=10**6) as server:
        rows = build_step_pairs(toy_records[:1], None, None, tiny_critic, _config(), seed=0, stats=stats,
                                candidates=_endpoint(server, max_retries=1), pairs_out=out)
    assert rows == [] and stats["failed_turns"] == stats["turns"] == 2
    assert [k for k, _ in stats["failed"]] == [0, 1] and "HTTP 500" in stats["failed"][0][1]
    printed = capsys.readouterr().out
    assert "turn 0 (task" in printed and "failed after retries" in printed and "turn 1 (task" in printed
    assert PF.read_pair_meta(out)["failed_turns"] == [0, 1]
    assert PF.journal_path(out).exists()  # kept: --resume samples the failed turns again
    stats = {}
    with LocalOpenAIServer(_responder) as server:
        rows = build_step_pairs(toy_records[:1], None, None, tiny_critic, _config(), seed=0, stats=stats,
                                candidates=_endpoint(server), pairs_out=out, resume=True)
    assert rows and stats["failed_turns"] == 0 and len(server.requests) == 2
    assert not PF.journal_path(out).exists() and PF.read_pair_meta(out)["failed_turns"] == []


def test_train_actor_samples_candidates_from_a_server(tmp_path, toy_records, tiny_model_dir, capsys):
    from tiny_model import save_tiny

    from sweet_agent.cli import main

    critic, ref = save_tiny(tmp_path / "critic", seed=0), save_tiny(tmp_path / "ref", seed=1)
    (critic / "sweet_critic.json").write_text(json.dumps({"reference_model": str(ref)}))
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in toy_records[:2]))
    pairs = tmp_path / "pairs.jsonl"
    with LocalOpenAIServer(_responder) as server:
        assert main(["train-actor", "--data", str(data), "--critic", str(critic), "--model_name_or_path",
                     str(tiny_model_dir), "--output_dir", str(tmp_path / "out"), "--num_candidates", "4",
                     "--candidates_from", "openai:test-model", "--candidates_base_url", server.base_url,
                     "--pairs_out", str(pairs), "--only_pairs", "--report_to", "none"]) == 0
    out = capsys.readouterr().out
    assert f"candidates from openai:test-model at {server.base_url}" in out
    assert "candidates from openai:test-model) ->" in out and "candidates/s" in out
    rows = [json.loads(x) for x in pairs.read_text().splitlines()]
    assert rows and {r["candidates_from"] for r in rows} == {"openai:test-model"}
    assert len(server.requests) == 4


def test_train_actor_resume_flag_samples_only_what_the_journal_lacks(tmp_path, toy_records, tiny_model_dir, capsys):
    """``--resume`` is train-actor's own flag: it reaches the step-pair stage (it was once rewritten
    into ``--resume_from_checkpoint last`` before parsing, and every restart sampled every turn again)."""
    from tiny_model import save_tiny

    from sweet_agent.cli import main

    critic, ref = save_tiny(tmp_path / "critic", seed=0), save_tiny(tmp_path / "ref", seed=1)
    (critic / "sweet_critic.json").write_text(json.dumps({"reference_model": str(ref)}))
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in toy_records[:2]))
    pairs = tmp_path / "pairs.jsonl"
    argv = ["train-actor", "--data", str(data), "--critic", str(critic), "--model_name_or_path", str(tiny_model_dir),
            "--output_dir", str(tmp_path / "out"), "--num_candidates", "4", "--candidates_from", "openai:test-model",
            "--candidates_max_retries", "0", "--candidates_turns_in_flight", "1", "--pairs_out", str(pairs),
            "--only_pairs", "--report_to", "none"]
    with LocalOpenAIServer(_responder, fail_first=1) as server:  # the first turn's request fails, no retry
        assert main([*argv, "--candidates_base_url", server.base_url]) == 0
        turns = len(server.requests)
    assert turns >= 2 and PF.read_pair_meta(pairs)["failed_turns"] == [0] and PF.journal_path(pairs).exists()
    first = capsys.readouterr()
    assert "rerun with --resume" in first.out
    with LocalOpenAIServer(_responder) as server:
        assert main([*argv, "--candidates_base_url", server.base_url, "--resume"]) == 0
        assert len(server.requests) == 1  # only the failed turn is sampled again
    out = capsys.readouterr()
    assert "(resuming)" in out.out and f"{turns - 1} turns were already in the journal" in out.out
    assert "deprecated" not in out.err
    assert PF.read_pair_meta(pairs)["failed_turns"] == [] and not PF.journal_path(pairs).exists()


# ----------------------------------------------------------------------------- shards, resume, merge
def test_shards_partition_the_turns(toy_records):
    turns = stage_turns(toy_records, _config(turn_fraction=0.7), seed=3)
    owned = [[k for k in range(len(turns)) if PF.Shard(i, 3).owns(k)] for i in range(3)]
    assert sorted(k for ks in owned for k in ks) == list(range(len(turns)))  # every turn once
    assert all(len(ks) in (len(turns) // 3, len(turns) // 3 + 1) for ks in owned)  # balanced
    assert PF.Shard.parse("2/3") == PF.Shard(2, 3) and PF.Shard.parse(None) == PF.Shard(0, 1)
    for bad in ("3/3", "1", "a/b", "-1/2"):
        with pytest.raises(PF.PairFileError, match="--shard"):
            PF.Shard.parse(bad)
    assert PF.Shard(1, 4).path("run/step_pairs.jsonl") == Path("run/step_pairs.shard-1-of-4.jsonl")


def test_merged_shards_equal_the_unsharded_run(tiny_critic, tiny_tokenizer, policy, toy_records, tmp_path):
    recs, cfg = toy_records[:3], _config(pairs_per_turn=1)
    whole = build_step_pairs(recs, policy, tiny_tokenizer, tiny_critic, cfg, seed=5, pairs_out=tmp_path / "all.jsonl")
    assert len(whole) >= 3 and all(r["candidates_from"].startswith("policy:") for r in whole)
    shards = []
    for i in range(3):
        path = PF.Shard(i, 3).path(tmp_path / "pairs.jsonl")
        part = build_step_pairs(recs, policy, tiny_tokenizer, tiny_critic, cfg, seed=5, shard=f"{i}/3", pairs_out=path)
        assert {r["turn"] % 3 for r in part} <= {i}
        shards.append(path)
    rows, meta = PF.merge_pair_files(list(reversed(shards)))
    assert rows == whole  # same candidates, scores and pairs, in turn order
    assert meta["counts"] == PF.read_pair_meta(tmp_path / "all.jsonl")["counts"]


class _Interrupt(KeyboardInterrupt):
    pass


def test_a_resumed_stage_equals_an_uninterrupted_one(tiny_critic, tiny_tokenizer, policy, toy_records, tmp_path):
    recs, cfg = toy_records[:3], _config(pairs_per_turn=1)
    want = build_step_pairs(recs, policy, tiny_tokenizer, tiny_critic, cfg, seed=1)
    out = tmp_path / "pairs.jsonl"
    source = local_policy(policy, tiny_tokenizer, 4)
    sample, calls = source.sample_n, []

    def dying(*args, **kwargs):  # Ctrl-C while the third turn samples
        calls.append(1)
        if len(calls) == 3:
            raise _Interrupt
        return sample(*args, **kwargs)

    source.sample_n = dying
    with pytest.raises(_Interrupt):
        build_step_pairs(recs, policy, tiny_tokenizer, tiny_critic, cfg, seed=1, candidates=source, pairs_out=out)
    journal = PF.journal_path(out)
    assert not out.exists() and len(journal.read_text().splitlines()) == 1 + 2  # header + two finished turns
    with open(journal, "a") as fh:
        fh.write('{"turn": 2, "rows": [')  # torn: killed mid-line
    stats: dict = {}
    got = build_step_pairs(recs, policy, tiny_tokenizer, tiny_critic, cfg, seed=1, pairs_out=out, resume=True,
                           stats=stats)
    assert stats["resumed_turns"] == 2 and got == want
    assert [json.loads(x) for x in out.read_text().splitlines()] == want and not journal.exists()
    again: dict = {}  # resuming a finished stage reads it back
    assert build_step_pairs(recs, policy, tiny_tokenizer, tiny_critic, cfg, seed=1, pairs_out=out, resume=True,
                            stats=again) == want


def test_resume_and_merge_refuse_other_settings(tiny_critic, tiny_tokenizer, policy, toy_records, tmp_path, capsys):
    from sweet_agent.cli import main

    recs = toy_records[:2]
    a = PF.Shard(0, 2).path(tmp_path / "pairs.jsonl")
    b = PF.Shard(1, 2).path(tmp_path / "pairs.jsonl")
    build_step_pairs(recs, policy, tiny_tokenizer, tiny_critic, _config(), seed=0, shard="0/2", pairs_out=a)
    build_step_pairs(recs, policy, tiny_tokenizer, tiny_critic, _config(num_candidates=3), seed=0, shard="1/2",
                     pairs_out=b)
    with pytest.raises(PF.PairFileError, match="--resume: .* other settings .*num_candidates: 4 vs 3"):
        build_step_pairs(recs, policy, tiny_tokenizer, tiny_critic, _config(num_candidates=3), seed=0, shard="0/2",
                         pairs_out=a, resume=True)
    with pytest.raises(SystemExit) as refused:  # refused before any work: exit 2
        main(["merge-pairs", str(a), str(b), "-o", str(tmp_path / "merged.jsonl")])
    assert refused.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "built with different settings (step_pairs.num_candidates: 4 vs 3)" in err
    assert not (tmp_path / "merged.jsonl").exists()
    with pytest.raises(PF.PairFileError, match=r"shard\(s\) 1/2 missing"):
        PF.merge_pair_files([a])
    with pytest.raises(PF.PairFileError, match="both shard 0/2"):
        PF.merge_pair_files([a, a])
    b2 = PF.Shard(1, 2).path(tmp_path / "ok.jsonl")
    build_step_pairs(recs, policy, tiny_tokenizer, tiny_critic, _config(), seed=0, shard="1/2", pairs_out=b2)
    assert main(["merge-pairs", str(a), str(b2), "-o", str(tmp_path / "merged.jsonl")]) == 0
    assert "[merge-pairs]" in capsys.readouterr().out and PF.read_pair_meta(tmp_path / "merged.jsonl")["shard"] == "0/1"


def test_a_critic_trained_again_cannot_resume_or_merge_with_the_one_that_scored_a_file(
        tiny_critic, tiny_tokenizer, policy, toy_records, tmp_path):
    """Same settings, same metadata, other weights (a critic retrained after a lost machine):
    the pairs' meta records the critic checkpoint's fingerprint, so --resume and merge-pairs
    refuse to mix its turns with the first critic's, in one line."""
    import dataclasses

    first = dataclasses.replace(tiny_critic, fingerprint="a" * 64)
    again = dataclasses.replace(tiny_critic, fingerprint="b" * 64)
    recs = toy_records[:2]
    a = PF.Shard(0, 2).path(tmp_path / "pairs.jsonl")
    b = PF.Shard(1, 2).path(tmp_path / "pairs.jsonl")
    rows = build_step_pairs(recs, policy, tiny_tokenizer, first, _config(), seed=0, shard="0/2", pairs_out=a)
    assert PF.read_pair_meta(a)["settings"]["critic"]["fingerprint"] == "a" * 64
    with pytest.raises(PF.PairFileError, match="--resume: .* other settings .*critic.fingerprint") as err:
        build_step_pairs(recs, policy, tiny_tokenizer, again, _config(), seed=0, shard="0/2", pairs_out=a, resume=True)
    assert "\n" not in str(err.value)
    # the same critic resumes its finished file without sampling anything
    assert build_step_pairs(recs, policy, tiny_tokenizer, first, _config(), seed=0, shard="0/2", pairs_out=a,
                            resume=True) == rows
    build_step_pairs(recs, policy, tiny_tokenizer, again, _config(), seed=0, shard="1/2", pairs_out=b)
    with pytest.raises(PF.PairFileError, match=r"built with different settings \(critic.fingerprint"):
        PF.merge_pair_files([a, b])
    # a file from before the fingerprint was recorded: which critic scored it is unknown, not different
    meta = PF.read_pair_meta(a)
    del meta["settings"]["critic"]["fingerprint"]
    PF.meta_path(a).write_text(json.dumps(meta))
    assert build_step_pairs(recs, policy, tiny_tokenizer, again, _config(), seed=0, shard="0/2", pairs_out=a,
                            resume=True) == rows
    assert len(PF.merge_pair_files([a, b])[0]) == len(rows) + len(PF.read_pair_rows(b))


def test_a_loaded_critic_carries_its_checkpoint_fingerprint(tmp_path, tiny_model_dir):
    """load_critic fingerprints the folder it loads (what the pair meta and critic report record);
    a critic built in memory has none."""
    import shutil

    from sweet_agent.critic.loading import META_FILE, LoadedCritic, load_critic
    from sweet_agent.training.models import model_fingerprint

    critic = tmp_path / "critic"
    shutil.copytree(tiny_model_dir, critic)
    (critic / META_FILE).write_text(json.dumps({"reference_model": str(tiny_model_dir)}))
    loaded = load_critic(critic, "float32", device="cpu")
    assert loaded.fingerprint == model_fingerprint(critic)["sha256"] and len(loaded.fingerprint) == 64
    assert load_critic(critic, "float32", with_reference=False, device="cpu").fingerprint == loaded.fingerprint
    assert LoadedCritic(loaded.model, loaded.ref, loaded.tokenizer, {}).fingerprint is None


def test_train_actor_shard_needs_only_pairs(tmp_path, toy_records, tiny_model_dir, capsys):
    from sweet_agent.cli import main

    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in toy_records[:1]))
    with pytest.raises(SystemExit, match="--shard 1/2 builds 1/2 of the pairs: add --only_pairs"):
        main(["train-actor", "--data", str(data), "--critic", str(tmp_path), "--model_name_or_path",
              str(tiny_model_dir), "--output_dir", str(tmp_path / "o"), "--shard", "1/2", "--report_to", "none"])


def test_train_actor_refuses_an_endpoint_without_candidates_from(tmp_path, toy_records, tiny_model_dir):
    """``--candidates_base_url`` alone used to be ignored (the local policy sampled, the endpoint
    was never asked); now it is a one-line error before any model loads."""
    from sweet_agent.cli import main

    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in toy_records[:1]))
    argv = ["train-actor", "--data", str(data), "--critic", str(tmp_path), "--model_name_or_path",
            str(tiny_model_dir), "--output_dir", str(tmp_path / "o"), "--only_pairs", "--report_to", "none",
            "--candidates_base_url", "http://127.0.0.1:9/v1"]
    with pytest.raises(SystemExit) as refused:
        main(argv)
    message = str(refused.value)
    assert "\n" not in message and "--candidates_base_url http://127.0.0.1:9/v1" in message
    assert "add --candidates_from openai:MODEL" in message
    assert not (tmp_path / "o").exists()  # refused before any work
    with pytest.raises(SystemExit, match="--candidates_from must be policy or openai:MODEL"):
        main([*argv, "--candidates_from", "openai"])  # the endpoint with a source is read (and checked)


@pytest.mark.slow
def test_a_two_process_launch_builds_one_shard_each_and_merges_them(tmp_path, toy_records):
    """``torchrun --nproc_per_node 2 ... train-actor --only_pairs``: each process builds its shard
    (RANK/WORLD_SIZE), waits for the other's, and the main process writes the merged file, equal to
    what one process writes."""
    import subprocess

    from tiny_model import save_tiny

    model, critic, ref = (save_tiny(tmp_path / n, seed=s) for n, s in (("model", 2), ("critic", 0), ("ref", 1)))
    (critic / "sweet_critic.json").write_text(json.dumps({"reference_model": str(ref)}))
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in toy_records[:4]))
    args = ["train-actor", "--data", str(data), "--critic", str(critic), "--model_name_or_path", str(model),
            "--num_candidates", "3", "--max_new_tokens", "6", "--only_pairs", "--report_to", "none", "--use_cpu", "true"]
    # one intra-op thread in every process (torchrun's default per worker): a score summed by two threads
    # rounds differently in the last bits than by one, and the files are compared byte for byte
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    launch = subprocess.run([str(Path(sys.executable).with_name("torchrun")), "--nproc_per_node", "2",
                             "--master_port", str(_free_port()), "-m", "sweet_agent.cli", *args, "--output_dir",
                             str(tmp_path / "o2"), "--pairs_out", str(tmp_path / "two.jsonl")],
                            capture_output=True, text=True, timeout=900, env=env)
    assert launch.returncode == 0, launch.stderr[-3000:]
    assert "shard 0/2" in launch.stdout and "shard 1/2" in launch.stdout
    assert "step pairs of 2 processes merged" in launch.stdout
    one = subprocess.run([sys.executable, "-m", "sweet_agent.cli", *args, "--output_dir", str(tmp_path / "o1"),
                          "--pairs_out", str(tmp_path / "one.jsonl")], capture_output=True, text=True, timeout=900,
                         env=env)
    assert one.returncode == 0, one.stderr[-3000:]
    assert (tmp_path / "two.jsonl").read_text() == (tmp_path / "one.jsonl").read_text() != ""
    assert PF.read_pair_meta(tmp_path / "two.jsonl")["merged_from"] == [
        str(PF.Shard(i, 2).path(tmp_path / "two.jsonl")) for i in range(2)]


def _free_port() -> int:
    """A free local port for the launch's rendezvous."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]

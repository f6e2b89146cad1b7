"""The step-pair stage: runs steps 5-7 of :mod:`sweet_agent.sweet_rl.algorithm` (candidates,
step scores, top-half / bottom-half pairs) over every selected agent turn of the offline
trajectories, with what a long run needs around them: the turns' one global order
(:func:`stage_turns`), sharding, a journal and resume, a shared candidates file, endpoint
prefetch, the progress bar, counts and timings. The algorithm's functions are called, not
repeated: a turn's pairs are ``turn_candidates`` -> ``score_candidates`` -> ``pair_rows``.

WHY batched: the N candidates of one turn share their prompt, so one ``generate`` call with
``num_return_sequences=N`` decodes them together (one prefill, N rows per step) instead of N
sequential decodes; likewise the critic scores all N candidates in one padded forward per model.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from colbench_gym.protocol import Messages
from sweet_agent.actor.config import StepPairConfig
from sweet_agent.policies.exploration import ExplorationConfig
from sweet_agent.sweet_rl.algorithm import (
    agent_turns_in,
    pair_rows,
    question_count,
    score_candidates,
    turn_candidates,
)
from sweet_agent.training_data import records as R

if TYPE_CHECKING:
    from sweet_agent.actor.pair_files import Shard
    from sweet_agent.critic.loading import LoadedCritic


def sample_candidates(model, tokenizer, conversation: Messages, n: int, max_new_tokens: int = 256,
                      temperature: float = 1.0, top_p: float = 1.0, batch_size: int | None = None,
                      seed: int | None = None, return_truncated: bool = False, questions: int = 0,
                      exploration: ExplorationConfig | None = None) -> list[str] | tuple[list[str], int]:
    """``n`` sampled next agent turns from ``model`` (the current policy), in ``ceil(n / batch_size)``
    ``generate`` calls (one by default): :func:`turn_candidates` with the local model as the
    policy. With ``return_truncated``, also how many were cut by ``max_new_tokens`` (no
    end-of-turn token within the cap).

    ``questions`` (default 0: off) of the ``n`` — the last ones — are instead started with a
    question opener that the model completes, exactly as the exploring behaviour policy of the
    rollouts does (:class:`~sweet_agent.policies.exploration.ExploringPolicy` with ``exploration``,
    default :class:`ExplorationConfig`; the turn stops at the first ``?``). WHY: a small policy
    never asks on its own, so without them the critic only ever ranks answers against answers and
    step-level DPO cannot teach asking. The opener is part of the candidate's text, so a chosen
    asking candidate trains the whole question."""
    policy = local_policy(model, tokenizer, batch_size or max(1, n - questions))
    gens = turn_candidates(policy, conversation, n, _sampling(max_new_tokens, temperature, top_p), seed,
                           questions=questions, exploration=exploration)
    texts = [g.text for g in gens]
    truncated = sum(g.finish_reason == "length" for g in gens[:n - questions])
    return (texts, truncated) if return_truncated else texts


def local_policy(model, tokenizer, max_batch_size: int = 16):
    """The local transformers model as a :class:`~sweet_agent.policies.base.Policy` (the rollouts'
    :class:`~sweet_agent.policies.transformers_policy.TransformersPolicy`), on the device the
    model is on, in eval mode while it samples; the tokenizer's padding side is restored after
    each call (the trainer may pad on the right)."""
    from sweet_agent.policies.base import Policy
    from sweet_agent.policies.transformers_policy import TransformersPolicy

    class LocalCandidatePolicy(Policy):
        supports_prefix = True

        def __init__(self, base: TransformersPolicy):
            self.base, self.name, self.max_batch_size = base, f"policy:{base.name}", base.max_batch_size

        def _call(self, method, *args, **kwargs):
            side, was_training = self.base.tokenizer.padding_side, self.base.model.training
            self.base.model.eval()
            try:
                return method(*args, **kwargs)
            finally:
                self.base.tokenizer.padding_side = side
                self.base.model.train(was_training)

        def generate(self, conversations, sampling=None, seeds=None, prefixes=None):
            return self._call(self.base.generate, conversations, sampling, seeds, prefixes)

        def sample_n(self, conversation, n, sampling=None, seed=None):
            return self._call(self.base.sample_n, conversation, n, sampling, seed)

    return LocalCandidatePolicy(TransformersPolicy(model, tokenizer, max_batch_size=max(1, max_batch_size)))


def _sampling(max_new_tokens: int, temperature: float, top_p: float):
    from sweet_agent.policies.base import SamplingParams

    return SamplingParams(max_new_tokens=max_new_tokens, temperature=temperature, top_p=top_p, top_k=0)


def stage_turns(records: Sequence[dict[str, Any]], config: StepPairConfig, seed: int = 0,
                system_prompt: str | None = None) -> list[tuple[int, int, Messages]]:
    """The stage's agent turns ``(record index, turn index, policy prompt)``, in the one global
    order every shard computes alike: every record's turns (``first_turns``/``skip_turns``
    window), then ``turn_fraction`` of them sampled with ``seed``. Turn ``k`` of this list is
    sampled with seed ``seed + k`` whichever shard builds it."""
    turns = [(ri, ti, prompt) for ri, rec in enumerate(records)
             for n, (ti, _before, _, prompt) in enumerate(R.iter_agent_turns(rec, system_prompt))
             if (not config.first_turns or n < config.first_turns) and n >= config.skip_turns]
    if config.turn_fraction < 1:
        turns = random.Random(seed).sample(turns, max(1, round(len(turns) * config.turn_fraction)))
        turns.sort(key=lambda x: (x[0], x[1]))
    return turns


def build_step_pairs(records: Sequence[dict[str, Any]], policy, policy_tokenizer, critic: LoadedCritic,
                     config: StepPairConfig, system_prompt: str | None = None, seed: int = 0,
                     progress: bool = False, stats: dict[str, Any] | None = None, *, candidates=None,
                     shard: Shard | str | None = None, pairs_out: str | Path | None = None, resume: bool = False,
                     turns_in_flight: int = 4, timings: dict[str, float] | None = None,
                     candidates_file: str | Path | None = None,
                     policy_identity: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """DPO rows ``{"prompt", "chosen", "rejected", "chosen_score", "rejected_score"}`` (conversational
    format TRL's DPOTrainer reads) from the agent turns of offline trajectories, plus
    ``task_key``, ``agent_turn`` (the agent's own count in its trajectory, from 1),
    ``turn_index`` (the turn's dialogue position: agent turn k of a dialogue that starts with the
    person sits at 2k - 1), ``turn`` (its place in :func:`stage_turns`) and ``candidates_from``
    (which backend sampled the candidates).

    The candidates of a turn come from ``candidates`` (any :class:`~sweet_agent.policies.base.Policy`:
    an :class:`~sweet_agent.policies.openai_policy.OpenAIPolicy` for a vLLM / SGLang / llama.cpp
    server, one request per turn for all its candidates) or, by default, from the local model
    ``policy`` (:func:`local_policy`, one batched ``generate`` per turn on the model's device);
    an endpoint gets ``turns_in_flight`` turns ahead while the critic scores. A turn whose
    sampling fails for good (after the policy's retries) is reported, counted in
    ``failed_turns`` and written to no pair; ``--resume`` samples it again.

    ``candidates_file``: the candidates are sampled once and shared. When the file exists, every
    turn's candidates are read from it instead of sampled, after checking that it was written
    for the same base policy (``policy_identity``: the model's fingerprint,
    :func:`~sweet_agent.training.models.model_fingerprint`; default: the local ``policy``'s
    name), the same sampling settings, seed, turns and records
    (:func:`~sweet_agent.actor.pair_files.candidate_settings`; any difference is a one-line
    :class:`~sweet_agent.actor.pair_files.CandidateFileError`); when it does not, the candidates
    sampled here are written to it once every turn has them. So the critics of several training
    seeds score the same base-policy samples (``config.candidate_seed`` fixes their seed while
    ``seed`` still varies the pair draws).

    The policy samples from the prompt it saw in the rollout (system prompt from the record's
    ``meta``, or ``system_prompt``); the critic scores that same prompt plus the candidate, with
    the privileged info — the view it was trained on (``critic``: the loaded critic, whose
    metadata says how it reads a candidate: normalisation, privileged info), all candidates of a
    turn in batched forwards on the critic's device. ``config.step_score`` picks what the
    critic's log-probability is compared with (:data:`~sweet_agent.sweet_rl.algorithm.STEP_SCORES`: its reference model, or the
    release's sampling ``policy`` on the prompt without privileged info). ``stats`` (when given)
    receives the counts of :data:`~sweet_agent.actor.pair_files.COUNT_KEYS`, ``failed``
    (``[(turn, error)]``), ``resumed_turns``, ``reused_turns`` (candidates read from
    ``candidates_file``) and ``candidates_from``; ``timings`` (when given) what this call did:
    ``wall_seconds``, ``scoring_seconds`` (the critic's share), ``sampled_turns``,
    ``sampled_candidates`` and ``sampled_tokens``.

    ``shard`` (``"I/N"``) builds only the turns ``k`` with ``k % N == I``; ``pairs_out`` appends
    every finished turn to a journal beside it and writes the pairs and their meta at the end
    (:mod:`sweet_agent.actor.pair_files`); ``resume`` continues from that journal.

    ``config.explore_candidates`` (a fraction, default 0 = off) of the candidates of each agent
    turn (``explore_turns`` > 0: of the first N only) start with a question opener
    (:func:`sample_candidates`'s ``questions``), so the critic is offered "ask (again)" against
    "answer" wherever that decision exists; the local ``policy`` completes them (a server cannot
    continue a forced start).

    ``config.first_turns`` (default 0 = all, the paper's) keeps only each trajectory's first N
    agent turns, before ``turn_fraction`` subsamples; ``skip_turns`` (default 0) drops each
    trajectory's first N agent turns: with ``first_turns`` they select a window (``skip_turns=1,
    first_turns=2``: the second agent turn only). Both depart from the paper, which pairs every
    agent turn."""
    import time
    from dataclasses import fields

    from sweet_agent.actor import pair_files as PF
    from sweet_agent.policies.base import Generation, PolicyError, derive_seed

    config.check_step_pairs()  # before any sampling: a typo costs no compute
    shard = shard if isinstance(shard, PF.Shard) else PF.Shard.parse(shard)
    cseed = seed if config.candidate_seed is None else config.candidate_seed
    n_questions = question_count(config.num_candidates, config.explore_candidates)
    exploration = ExplorationConfig(rate=1.0, turns=config.explore_turns)
    source = candidates if candidates is not None else local_policy(
        policy, policy_tokenizer, config.sampling_batch_size or config.num_candidates)
    sampling = _sampling(config.max_new_tokens, config.temperature, config.top_p)
    label = source.name
    turns = stage_turns(records, config, cseed, system_prompt)
    settings = PF.stage_settings(config, [f.name for f in fields(StepPairConfig)], seed=seed,
                                 system_prompt=system_prompt, records=records, total_turns=len(turns),
                                 critic_meta=critic.meta, candidates_from=label,
                                 critic_fingerprint=getattr(critic, "fingerprint", None))
    mine = [k for k in range(len(turns)) if shard.owns(k)]
    shared: dict[int, list[dict[str, Any]]] = {}
    cand_path = cand_settings = None
    if candidates_file is not None:
        cand_path = shard.path(candidates_file)
        identity = policy_identity if policy_identity is not None else {
            "model": getattr(getattr(policy, "config", None), "_name_or_path", None) or label}
        cand_settings = PF.candidate_settings(config, seed=cseed, system_prompt=system_prompt, records=records,
                                              total_turns=len(turns), candidates_from=label, policy=identity,
                                              shard=shard)
        if cand_path.exists():
            shared = PF.read_candidate_file(cand_path, cand_settings)
            missing = [k for k in mine if k not in shared]
            if missing:
                raise PF.CandidateFileError(f"{cand_path} lacks the candidates of {len(missing)} of this stage's "
                                            f"{len(mine)} turns (first: turn {missing[0]}); remove it to sample again")
    question_source = source
    if n_questions and not shared and not getattr(source, "supports_prefix", False):
        if policy is None:
            raise ValueError(f"explore_candidates: question candidates are completed by the local policy ({source.name} "
                             "cannot continue a forced start of a turn); load the policy model too")
        question_source = local_policy(policy, policy_tokenizer, n_questions)
    done: dict[int, dict[str, Any]] = {}
    journal = None
    if pairs_out is not None:
        finished = _finished_file(pairs_out, settings, shard) if resume else None
        if finished is not None:
            rows, meta = finished
            if stats is not None:
                stats.update(meta.get("counts", {}), failed=[], resumed_turns=len(mine), reused_turns=0,
                             candidates_from=label)
            return rows
        journal = PF.TurnJournal(PF.journal_path(pairs_out), settings, shard, resume)
        done = {k: e for k, e in journal.done.items() if shard.owns(k)}
    todo = [k for k in mine if k not in done]

    def questions_at(k: int) -> int:
        return n_questions if not config.explore_turns or agent_turns_in(turns[k][2]) < config.explore_turns else 0

    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(mine), initial=len(mine) - len(todo), desc=f"step pairs ({label})", unit="turn",
                   dynamic_ncols=True)
    say = bar.write if bar is not None else print
    entries = dict(done)
    failed: list[tuple[int, str]] = []
    t_start, t_score = time.perf_counter(), 0.0
    sampled = {"sampled_turns": 0, "sampled_candidates": 0, "sampled_tokens": 0}
    reused = [k for k in todo if k in shared]
    jobs = [(k, turns[k][2], config.num_candidates - questions_at(k), cseed + k) for k in todo if k not in shared]
    stream = _candidate_stream(source, jobs, sampling, turns_in_flight) if jobs else iter(())
    try:
        for k, plain in _chain_reused(reused, stream):
            ri, ti, conv = turns[k]
            rec = records[ri]
            agent_turn = agent_turns_in(conv) + 1
            q = questions_at(k)
            try:
                if k in shared:
                    gens = [Generation(text=c["text"], completion_tokens=int(c.get("completion_tokens", 0)),
                                       finish_reason=c.get("finish_reason", "stop"),
                                       prefix=c.get("prefix", "")) for c in shared[k]]
                    q = sum(bool(c.get("question")) for c in shared[k])
                elif isinstance(plain, BaseException):
                    raise plain
                else:
                    gens = turn_candidates(source, conv, config.num_candidates, sampling, cseed + k, questions=q,
                                           exploration=exploration, question_policy=question_source, plain=plain)
            except PolicyError as exc:
                error = " ".join(str(exc).split())[:500]
                failed.append((k, error))
                say(f"[step pairs] turn {k} (task {R.task_key(rec)[:40]}, agent turn {agent_turn}, dialogue position "
                    f"{ti}) failed after retries: {error}")
                entry = {"turn": k, "agent_turn": agent_turn, "rows": [], "counts": {"turns": 1, "failed_turns": 1},
                         "error": error}
            else:
                cands = [g.text for g in gens]
                t0 = time.perf_counter()
                priv = R.privileged_info(rec) if critic.use_privileged_info else None
                scores = score_candidates(critic.model, critic.ref, critic.tokenizer, conv, cands, priv,
                                          critic.normalize, batch_size=config.score_batch_size,
                                          step_score=config.step_score, policy=policy,
                                          policy_tokenizer=policy_tokenizer, share_prefix=config.score_shared_prefix)
                t_score += time.perf_counter() - t0
                rows = [{**row, "task_key": R.task_key(rec), "agent_turn": agent_turn, "turn_index": ti, "turn": k,
                         "candidates_from": label}
                        for row in pair_rows(conv, cands, scores, config.pairs_per_turn,
                                             random.Random(derive_seed(seed, "pairs", k)))]
                entry = {"turn": k, "agent_turn": agent_turn, "rows": rows, "error": None, "counts": {
                    "turns": 1, "candidates": len(cands), "question_candidates": q,
                    "truncated_candidates": sum(g.finish_reason == "length" for g in gens[:len(gens) - q]),
                    "turns_without_pair": int(not rows), "pairs": len(rows),
                    "completion_tokens": sum(g.completion_tokens for g in gens)},
                    "candidates": [{"text": g.text, "finish_reason": g.finish_reason, "prefix": g.prefix,
                                    "completion_tokens": g.completion_tokens, "question": j >= len(gens) - q}
                                   for j, g in enumerate(gens)]}
                entries[k] = entry
                if k not in shared:
                    sampled["sampled_turns"] += 1
                    sampled["sampled_candidates"] += len(cands)
                    sampled["sampled_tokens"] += entry["counts"]["completion_tokens"]
            if journal is not None:
                journal.append(entry)
            if bar is not None:
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()
        if journal is not None:
            journal.close()
    ordered = [entries[k] for k in mine if k in entries]
    rows = [row for e in ordered for row in e["rows"]]
    counts = PF.sum_counts(ordered)
    counts["turns"] = len(mine)
    counts["failed_turns"] = len(failed)
    if cand_path is not None and not cand_path.exists() and not failed:
        if all("candidates" in e for e in ordered):
            PF.write_candidate_file(cand_path, {e["turn"]: e["candidates"] for e in ordered}, cand_settings)
        else:
            say(f"[step pairs] note: {cand_path} not written: turns resumed from an older journal lack their "
                "candidates")
    if pairs_out is not None:
        meta = {"format": PF.FORMAT, "settings": settings, "shard": shard.label, "counts": counts,
                "failed_turns": [k for k, _ in failed],
                "candidates": {"from": label, "base_url": getattr(source, "base_url", None),
                               "n_per_request": getattr(source, "supports_n", None),
                               "file": str(cand_path) if cand_path is not None else None,
                               "reused_from_file": bool(shared)}}
        PF.write_pair_file(pairs_out, rows, meta)
        if not failed:
            PF.journal_path(pairs_out).unlink(missing_ok=True)
    if stats is not None:
        stats.update(counts, failed=failed, resumed_turns=len(done), reused_turns=len(reused), candidates_from=label)
    if timings is not None:
        timings.update(sampled, wall_seconds=time.perf_counter() - t_start, scoring_seconds=t_score)
    return rows


def _chain_reused(reused: list[int], stream):
    """``(turn, None)`` for each turn whose candidates come from a candidates file, then the
    sampled turns of ``stream``."""
    for k in reused:
        yield k, None
    yield from stream


def _finished_file(pairs_out, settings: dict[str, Any], shard: Shard):
    """``(rows, meta)`` of a complete pair file at ``pairs_out`` built with these settings and
    this shard and no failed turn (``--resume`` of a finished stage), else None."""
    from sweet_agent.actor import pair_files as PF

    if PF.journal_path(pairs_out).exists() or not Path(pairs_out).is_file() or not PF.meta_path(pairs_out).is_file():
        return None
    meta = PF.read_pair_meta(pairs_out)
    diff = PF.pair_settings_differences(meta.get("settings", {}), settings)
    if diff or meta.get("shard") != shard.label:
        raise PF.PairFileError(f"--resume: {pairs_out} was built with other settings or shard "
                               f"({'; '.join(diff[:4]) or 'shard ' + str(meta.get('shard'))}); restore them, or rerun "
                               "without --resume to start over")
    if meta.get("failed_turns"):
        return None
    return PF.read_pair_rows(pairs_out), meta


def _candidate_stream(source, jobs: list[tuple[int, Messages, int, int]], sampling, turns_in_flight: int):
    """``(turn, plain candidates | exception | None)`` in ``jobs`` order. An endpoint source
    (``prefers_async``) is asked on a background event loop, ``turns_in_flight`` turns ahead of
    the caller (which scores meanwhile; 0: a turn is asked for only once the caller has scored
    the one before, no overlap); a local source yields ``None`` (the caller samples it on its
    own device, in turn)."""
    import asyncio
    import threading
    from collections import deque

    if not getattr(source, "prefers_async", False):
        for k, *_ in jobs:
            yield k, None
        return
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="step-pair-candidates", daemon=True)
    thread.start()
    pending: deque = deque()
    upcoming = iter(jobs)

    def submit() -> None:
        job = next(upcoming, None)
        if job is not None:
            k, conv, m, s = job
            pending.append((k, asyncio.run_coroutine_threadsafe(source.asample_n(conv, m, sampling, s), loop)
                            if m else None))

    ahead = max(0, int(turns_in_flight))
    try:
        for _ in range(max(1, ahead)):
            submit()
        while pending:
            k, fut = pending.popleft()
            try:
                result = fut.result() if fut is not None else []
            except Exception as exc:  # noqa: BLE001 - handed to the caller, which reports PolicyErrors
                result = exc
            if ahead:
                submit()  # the next turn goes out while the caller scores this one
            yield k, result
            if not ahead:
                submit()  # 0: only once the caller is done with this one (no overlap)
    finally:
        for _, fut in pending:
            if fut is not None:
                fut.cancel()
        try:
            asyncio.run_coroutine_threadsafe(source.aclose(), loop).result(timeout=30)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout=30)
            loop.close()

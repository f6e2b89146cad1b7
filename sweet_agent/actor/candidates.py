"""Step-level pairs for the actor: sample candidates per agent turn, score with the critic, pair.

WHY batched: the N candidates of one turn share their prompt, so one ``generate`` call with
``num_return_sequences=N`` decodes them together (one prefill, N rows per step) instead of N
sequential decodes; likewise the critic scores all N candidates in one padded forward per model.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import torch

from colbench_gym.protocol import Messages
from sweet_agent.critic.advantages import aggregate_turns, token_logprobs, token_logratios, with_privileged
from sweet_agent.policies.exploration import ExplorationConfig
from sweet_agent.training_data import records as R
from sweet_agent.training_data.spans import assistant_token_spans, spans_to_turn_ids

if TYPE_CHECKING:
    from sweet_agent.critic.loading import LoadedCritic


@torch.no_grad()
def sample_candidates(model, tokenizer, conversation: Messages, n: int, max_new_tokens: int = 256,
                      temperature: float = 1.0, top_p: float = 1.0, batch_size: int | None = None,
                      seed: int | None = None, return_truncated: bool = False, questions: int = 0,
                      exploration: ExplorationConfig | None = None) -> list[str] | tuple[list[str], int]:
    """``n`` sampled next agent turns from ``model`` (the current policy), in ``ceil(n / batch_size)``
    ``generate`` calls (one by default). With ``return_truncated``, also how many were cut by
    ``max_new_tokens`` (no end-of-turn token within the cap).

    ``questions`` (default 0: off) of the ``n`` — the last ones — are instead started with a
    question opener that the model completes, exactly as the exploring behaviour policy of the
    rollouts does (:class:`~sweet_agent.policies.exploration.ExploringPolicy` with ``exploration``,
    default :class:`ExplorationConfig`; the turn stops at the first ``?``). WHY: a small policy
    never asks on its own, so without them the critic only ever ranks answers against answers and
    step-level DPO cannot teach asking. The opener is part of the candidate's text, so a chosen
    asking candidate trains the whole question."""
    if not 0 <= questions <= n:
        raise ValueError(f"questions must be in [0, n={n}], got {questions}")
    asked = _question_candidates(model, tokenizer, conversation, questions, max_new_tokens, temperature, top_p,
                                 seed, exploration) if questions else []
    n -= questions
    if seed is not None:
        torch.manual_seed(seed)
    prompt = tokenizer.apply_chat_template(conversation, tokenize=False, add_generation_prompt=True)
    enc = tokenizer(prompt, add_special_tokens=False, return_tensors="pt").to(next(model.parameters()).device)
    batch_size = batch_size or n
    was_training = model.training
    model.eval()
    texts: list[str] = []
    truncated = 0
    try:
        while len(texts) < n:
            k = min(batch_size, n - len(texts))
            out = model.generate(**enc, do_sample=temperature > 0, temperature=temperature if temperature > 0 else None,
                                 top_p=top_p, top_k=0, max_new_tokens=max_new_tokens, num_return_sequences=k,
                                 pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id)
            new = out[:, enc["input_ids"].shape[1]:]
            ended = (new == tokenizer.eos_token_id).any(dim=1) | (new == tokenizer.pad_token_id).any(dim=1)
            truncated += int(((new.shape[1] >= max_new_tokens) & ~ended).sum())
            texts += tokenizer.batch_decode(new, skip_special_tokens=True)
    finally:
        model.train(was_training)
    texts = [t.strip() for t in texts] + asked
    return (texts, truncated) if return_truncated else texts


def _question_candidates(model, tokenizer, conversation: Messages, n: int, max_new_tokens: int, temperature: float,
                         top_p: float, seed: int | None, exploration: ExplorationConfig | None) -> list[str]:
    """``n`` agent turns started with a question opener (seeded choice among the openers) and
    completed by ``model``: the rollouts' :class:`ExploringPolicy` on this one conversation."""
    from sweet_agent.policies.base import SamplingParams, derive_seed
    from sweet_agent.policies.exploration import ExploringPolicy
    from sweet_agent.policies.transformers_policy import TransformersPolicy

    config = replace(exploration or ExplorationConfig(), rate=1.0)  # every one of these n asks
    if seed is None:
        seed = random.getrandbits(62)
    seeds = [derive_seed(seed, "question-candidate", j) for j in range(n)]
    if any(config.opener_for(conversation, s) is None for s in seeds):
        raise ValueError(f"question candidates asked for agent turn {_agent_turn(conversation) + 1}, but exploration "
                         f"covers only the first {config.turns} agent turn(s)")
    side, was_training = tokenizer.padding_side, model.training
    model.eval()
    try:
        policy = ExploringPolicy(TransformersPolicy(model, tokenizer, max_batch_size=max(1, n)), config)
        gens = policy.generate([conversation] * n, SamplingParams(max_new_tokens=max_new_tokens, temperature=temperature,
                                                                  top_p=top_p, top_k=0), seeds)
    finally:
        tokenizer.padding_side = side  # the policy pads on the left; the trainer may not
        model.train(was_training)
    return [g.text.strip() for g in gens]


def _agent_turn(messages: Messages) -> int:
    return sum(1 for m in messages if m.get("role") == "assistant")


def question_count(n: int, fraction: float) -> int:
    """How many of a turn's ``n`` candidates start with a question opener for ``fraction`` (at
    least one when ``fraction > 0``, so a small ``n`` still gets a question)."""
    if not 0 <= fraction <= 1:
        raise ValueError(f"explore_candidates must be in [0, 1], got {fraction}")
    return 0 if fraction == 0 else min(n, max(1, round(fraction * n)))


#: How a candidate turn is scored (``ActorConfig.step_score``, ``--step_score``):
#:   critic-ref — ours: the critic's log-ratio against its own reference model, both reading the
#:                same privileged sequence (the advantage of ``sweet_agent.critic.advantages``)
#:   release    — the paper release's: the critic's token-mean log-probability of the candidate
#:                with the privileged info minus the *sampling policy's* token mean on its own
#:                prompt (no privileged info); no critic reference model is read
STEP_SCORES = ("critic-ref", "release")


def check_step_score(step_score: str) -> None:
    if step_score not in STEP_SCORES:
        raise ValueError(f"step_score must be one of {', '.join(STEP_SCORES)}; got {step_score!r}")


@dataclass
class StepPairConfig:
    """How :func:`build_step_pairs` samples, scores and pairs candidates (the paper's defaults).
    :class:`~sweet_agent.actor.config.ActorConfig` is this plus TRL's ``DPOConfig``, so every
    field is a ``train-actor`` flag; tests and scripts build this one alone (no trl needed)."""

    num_candidates: int = field(default=16, metadata={"help": "candidate actions sampled per agent turn"})
    pairs_per_turn: int = field(default=1, metadata={"help": "(chosen, rejected) pairs drawn per agent turn"})
    turn_fraction: float = field(default=1.0, metadata={"help": "fraction of the offline agent turns to use"})
    first_turns: int = field(default=0, metadata={
        "help": "use only each trajectory's first N agent turns (0 = all, the paper's); applied before turn_fraction"})
    skip_turns: int = field(default=0, metadata={
        "help": "leave out each trajectory's first N agent turns (with first_turns: a window of turns)"})
    max_new_tokens: int = field(default=256, metadata={"help": "length cap of a sampled candidate"})
    temperature: float = field(default=1.0, metadata={"help": "sampling temperature of candidates"})
    top_p: float = field(default=1.0, metadata={"help": "nucleus sampling of candidates"})
    sampling_batch_size: int | None = field(default=None, metadata={"help": "candidates per generate call (default: all of a turn's in one call)"})
    explore_candidates: float = field(default=0.0, metadata={
        "help": "fraction of a turn's num_candidates started with a question opener that the policy completes "
                "(at least one when > 0; 0 = off, the paper's): a policy that never asks gives the critic no "
                "question to prefer, so step-level DPO cannot teach asking (docs/training.md)"})
    explore_turns: int = field(default=1, metadata={"help": "question candidates only at the first N agent turns"})
    step_score: str = field(default="critic-ref", metadata={
        "help": "what a candidate's critic log-probability is compared with: critic-ref (ours: the critic's "
                "reference model on the same privileged sequence) or release (the paper release's: the sampling "
                "policy's token-mean log-probability on its own prompt, without the privileged info)"})

    def __post_init__(self):
        self.check_step_pairs()

    def check_step_pairs(self) -> None:
        """One-line errors for settings no sampling can use (before any model is loaded)."""
        if self.num_candidates < 2:
            raise ValueError(f"num_candidates must be >= 2 to form a top/bottom split, got {self.num_candidates}")
        if self.pairs_per_turn < 1:
            raise ValueError(f"pairs_per_turn must be >= 1, got {self.pairs_per_turn}")
        if self.sampling_batch_size is not None and self.sampling_batch_size < 1:
            raise ValueError(f"sampling_batch_size must be >= 1, got {self.sampling_batch_size}")
        if not 0 < self.turn_fraction <= 1:
            raise ValueError(f"turn_fraction must be in (0, 1], got {self.turn_fraction}")
        if self.first_turns < 0:
            raise ValueError(f"first_turns must be >= 0 (0 = every agent turn), got {self.first_turns}")
        if self.skip_turns < 0:
            raise ValueError(f"skip_turns must be >= 0, got {self.skip_turns}")
        if not 0 <= self.explore_candidates <= 1:
            raise ValueError(f"explore_candidates must be in [0, 1], got {self.explore_candidates}")
        if self.explore_turns < 1:
            raise ValueError(f"explore_turns must be >= 1, got {self.explore_turns}")
        check_step_score(self.step_score)


def _candidate_batch(tokenizer, messages_before: Messages, candidates: Sequence[str],
                     privileged_info: str | None, device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Padded ``(input_ids, attention_mask, turn_ids)`` of ``messages_before`` + each candidate as
    the next assistant turn; ``turn_ids`` is 1 on the candidate's tokens (its span through the
    end-of-turn token, located by the chat template), 0 elsewhere."""
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    seqs, turns = [], []
    for cand in candidates:
        msgs = with_privileged([*messages_before, {"role": "assistant", "content": cand}], privileged_info)
        ids, spans = assistant_token_spans(tokenizer, msgs)
        last = spans[-1:]  # only the candidate turn is scored
        seqs.append(ids)
        turns.append([1 if t == len(spans) else 0 for t in spans_to_turn_ids(len(ids), spans)] if last else [0] * len(ids))
    T = max(map(len, seqs))
    input_ids = torch.full((len(seqs), T), pad, dtype=torch.long)
    attn = torch.zeros_like(input_ids)
    turn_ids = torch.zeros_like(input_ids)
    for i, (s, t) in enumerate(zip(seqs, turns)):
        input_ids[i, :len(s)] = torch.tensor(s)
        attn[i, :len(s)] = 1
        turn_ids[i, :len(t)] = torch.tensor(t)
    return input_ids.to(device), attn.to(device), turn_ids.to(device)


@torch.no_grad()
def _per_candidate(model, tokenizer, messages_before: Messages, candidates: Sequence[str],
                   privileged_info: str | None, batch_size: int, value) -> list[float]:
    """``value(input_ids, attention_mask, turn_ids) -> [B]`` over batches of ``batch_size``
    candidates, with ``model`` in eval mode meanwhile."""
    device = next(model.parameters()).device
    out: list[float] = []
    was_training = model.training
    model.eval()
    try:
        for start in range(0, len(candidates), batch_size):
            batch = _candidate_batch(tokenizer, messages_before, candidates[start:start + batch_size],
                                     privileged_info, device)
            out += [float(v) for v in value(*batch)]
    finally:
        model.train(was_training)
    return out


def candidate_logprobs(model, tokenizer, messages_before: Messages, candidates: Sequence[str],
                       privileged_info: str | None = None, normalize: str = "turn",
                       batch_size: int = 16) -> list[float]:
    """Each candidate's token-mean log-probability (``normalize="none"``: the sum) as the next
    agent turn under ``model``, reading ``messages_before`` (with ``privileged_info`` when given).
    One batched forward per ``batch_size`` candidates."""
    def value(ids, attn, turn_ids):
        return aggregate_turns(token_logprobs(model, ids, attn, turn_ids > 0), turn_ids, 1, normalize)[0][:, 0]

    return _per_candidate(model, tokenizer, messages_before, candidates, privileged_info, batch_size, value)


def score_candidates(critic, critic_ref, tokenizer, messages_before: Messages, candidates: Sequence[str],
                     privileged_info: str | None = None, normalize: str = "turn",
                     batch_size: int = 16, step_score: str = "critic-ref", policy=None,
                     policy_tokenizer=None) -> list[float]:
    """The critic's score of each candidate as the next agent turn (one batched forward per
    model per ``batch_size`` candidates).

    ``step_score="critic-ref"`` (ours): the critic's advantage, its log-ratio against
    ``critic_ref`` on the privileged sequence. ``"release"`` (the paper release's): the critic's
    token mean with ``privileged_info`` minus ``policy``'s (the model that sampled the candidates,
    with ``policy_tokenizer``) on the prompt without it; ``critic_ref`` is not used. Both honour
    ``normalize`` ("none": token sums on both sides, the release's ``--use_sum``)."""
    from sweet_agent.critic.regression import RegressionCritic

    check_step_score(step_score)
    if step_score == "release":
        if isinstance(critic, RegressionCritic):
            raise ValueError("step_score 'release' needs a log-probability critic; a regression critic "
                             "(--critic_type regression) has no token log-probabilities: use step_score critic-ref")
        if policy is None:
            raise ValueError("step_score 'release' needs the sampling policy (policy=...) to score against")
        privileged = candidate_logprobs(critic, tokenizer, messages_before, candidates, privileged_info,
                                        normalize, batch_size)
        sampling = candidate_logprobs(policy, policy_tokenizer or tokenizer, messages_before, candidates, None,
                                      normalize, batch_size)
        return [c - p for c, p in zip(privileged, sampling)]

    def value(ids, attn, turn_ids):
        if isinstance(critic, RegressionCritic):
            return critic(input_ids=ids, attention_mask=attn, turn_ids=turn_ids, num_turns=1)[:, 0]
        lr = token_logratios(critic, critic_ref, ids, attn, turn_ids > 0)
        return aggregate_turns(lr, turn_ids, 1, normalize)[0][:, 0]

    return _per_candidate(critic, tokenizer, messages_before, candidates, privileged_info, batch_size, value)


def select_pairs(candidates: Sequence[str], scores: Sequence[float], pairs_per_turn: int = 1,
                 rng: random.Random | None = None) -> list[tuple[int, int]]:
    """Indices ``(chosen, rejected)``: chosen at random from the top half by score, rejected at
    random from the bottom half (the paper's rule). Distinct pairs, and never two identical
    texts (they carry no preference); fewer than ``pairs_per_turn`` when not enough exist."""
    if len(candidates) != len(scores):
        raise ValueError(f"{len(candidates)} candidates but {len(scores)} scores")
    n = len(candidates)
    if n < 2:
        return []
    rng = rng or random.Random(0)
    order = sorted(range(n), key=lambda i: -scores[i])
    top, bottom = order[: n // 2], order[n // 2:]
    options = [(c, r) for c in top for r in bottom if candidates[c] != candidates[r]]
    return rng.sample(options, min(pairs_per_turn, len(options)))


def build_step_pairs(records: Sequence[dict[str, Any]], policy, policy_tokenizer, critic: LoadedCritic,
                     config: StepPairConfig, system_prompt: str | None = None, seed: int = 0,
                     progress: bool = False, stats: dict[str, int] | None = None) -> list[dict[str, Any]]:
    """DPO rows ``{"prompt", "chosen", "rejected", "chosen_score", "rejected_score"}`` (conversational
    format TRL's DPOTrainer reads) from the agent turns of offline trajectories.

    The policy samples from the prompt it saw in the rollout (system prompt from the record's
    ``meta``, or ``system_prompt``); the critic scores that same prompt plus the candidate, with
    the privileged info — the view it was trained on (``critic``: the loaded critic, whose
    metadata says how it reads a candidate: normalisation, privileged info). ``config.step_score``
    picks what the critic's log-probability is compared with (:data:`STEP_SCORES`: its reference
    model, or the release's sampling ``policy`` on the prompt without privileged info). ``stats``
    (when given) receives counts: ``turns``, ``candidates``, ``truncated_candidates`` (cut by
    ``max_new_tokens``), ``turns_without_pair`` (all candidates identical) and
    ``question_candidates``.

    ``config.explore_candidates`` (a fraction, default 0 = off) of the candidates of each of the
    first ``explore_turns`` agent turns start with a question opener (:func:`sample_candidates`'s
    ``questions``), so the critic can prefer asking and a chosen question teaches it.

    ``config.first_turns`` (default 0 = all) keeps only each trajectory's first N agent turns,
    before ``turn_fraction`` subsamples: where the decision to ask is made, and where question
    candidates are offered, at a fraction of the sampling cost of every turn. ``skip_turns``
    (default 0) drops each trajectory's first N agent turns: with ``first_turns`` it selects a
    window (``skip_turns=1, first_turns=2``: the second agent turn only), e.g. to add pairs for the
    turn after a question to pairs already built for the first."""
    config.check_step_pairs()  # before any sampling: a typo costs no compute
    n_questions = question_count(config.num_candidates, config.explore_candidates)
    exploration = ExplorationConfig(rate=1.0, turns=config.explore_turns)
    rng = random.Random(seed)
    turns = [(ri, ti, before, prompt) for ri, rec in enumerate(records)
             for n, (ti, before, _, prompt) in enumerate(R.iter_agent_turns(rec, system_prompt))
             if (not config.first_turns or n < config.first_turns) and n >= config.skip_turns]
    if config.turn_fraction < 1:
        turns = rng.sample(turns, max(1, round(len(turns) * config.turn_fraction)))
        turns.sort(key=lambda x: (x[0], x[1]))
    iterator = turns
    if progress:
        from tqdm.auto import tqdm

        iterator = tqdm(turns, desc="step pairs")
    rows = []
    counts = {"turns": len(turns), "candidates": 0, "truncated_candidates": 0, "turns_without_pair": 0,
              "question_candidates": 0}
    for k, (ri, ti, _before, conv) in enumerate(iterator):
        rec = records[ri]
        questions = n_questions if _agent_turn(conv) < config.explore_turns else 0
        cands, cut = sample_candidates(policy, policy_tokenizer, conv, config.num_candidates, config.max_new_tokens,
                                       config.temperature, config.top_p, config.sampling_batch_size, seed=seed + k,
                                       return_truncated=True, questions=questions, exploration=exploration)
        counts["candidates"] += len(cands)
        counts["question_candidates"] += questions
        counts["truncated_candidates"] += cut
        priv = R.privileged_info(rec) if critic.use_privileged_info else None
        scores = score_candidates(critic.model, critic.ref, critic.tokenizer, conv, cands, priv, critic.normalize,
                                  step_score=config.step_score, policy=policy, policy_tokenizer=policy_tokenizer)
        chosen = select_pairs(cands, scores, config.pairs_per_turn, rng)
        counts["turns_without_pair"] += not chosen
        for c, r in chosen:
            rows.append({"prompt": conv, "chosen": [{"role": "assistant", "content": cands[c]}],
                         "rejected": [{"role": "assistant", "content": cands[r]}],
                         "chosen_score": scores[c], "rejected_score": scores[r],
                         "task_key": R.task_key(rec), "turn_index": ti})
    if stats is not None:
        stats.update(counts)
    return rows

"""SWEET-RL (arXiv 2503.15478) in one place, in the order the data flows, in the paper's notation.

c is the *training-time information* (the task's reference solution, code or HTML) that the
critic reads and the policy never does; o_t the dialogue before agent turn t; a_t the agent's
turn t, of L_t tokens; τ⁺ / τ⁻ the preferred and the other trajectory of a task's pair.

  1. trajectory pairs (τ⁺, τ⁻) per task      sweet_agent.training_data.pairs (shared with the baselines)
  2. the critic's view: c before o_t          with_privileged
  3. per-turn advantage A(o_t, a_t, c)        token_logratios, aggregate_turns
  4. the critic's Bradley–Terry loss          bradley_terry_loss
  5. candidates per agent turn                turn_candidates
  6. step scores                              score_candidates
  7. top-half / bottom-half step pairs        select_pairs, pair_rows
  8. the actor's DPO + NLL                    ACTOR_BETA, ACTOR_LOSS_TYPE, ACTOR_LOSS_WEIGHTS

WHY one module: every function here is a step of the method and nothing else. The machinery
that runs the steps at scale sits beside it and calls them: the critic's trainer
(:mod:`sweet_agent.critic.trainer`, TRL style: batches of pairs through 3 and 4), the step-pair
stage (:mod:`sweet_agent.actor.candidates`: which turns, sharding, journal, resume, progress bar,
timings, endpoint prefetch; 5-7 for each turn; :mod:`sweet_agent.actor.cli` places its models on
their device and loads the critic) and the actor's trainer
(:mod:`sweet_agent.actor.trainer`: TRL's ``DPOTrainer`` with 8). How token log-probabilities are
computed fast and in bounded memory (the LM head in pieces, a turn's prompt computed once for
all its candidates) is :mod:`sweet_agent.sweet_rl.logprobs`.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import torch
import torch.nn.functional as F

from colbench_gym.protocol import Messages
from sweet_agent.policies.exploration import ExplorationConfig
from sweet_agent.sweet_rl.logprobs import last_turn_values, token_logprobs

# ---------------------------------------------------------------------------------------------
# 1. Trajectory pairs. sweet_agent.training_data.pairs.build_trajectory_pairs groups scored
#    rollouts by task and pairs each successful trajectory τ⁺ with every worse τ⁻ of its task
#    (--pair_rule; the paper's is success); split_by_task holds out whole tasks; pairs_to_rows
#    gives each pair its c (the record's reference solution). It lives with the training data
#    because multi-turn DPO and RFT choose their trajectories by the same rules.
# ---------------------------------------------------------------------------------------------

# ---------------------------------------------------------------------------------------------
# 2. The critic's view: c, then the dialogue. The same view when the critic learns from whole
#    trajectories and when it scores one candidate turn.
# ---------------------------------------------------------------------------------------------

PRIVILEGED_HEADER = (
    "Training-time information (hidden from the agent): the reference solution of this task.\n"
)


def with_privileged(messages: Messages, privileged_info: str | None,
                    header: str = PRIVILEGED_HEADER) -> Messages:
    """Place the privileged information before the dialogue, as (part of) the system message."""
    messages = [dict(m) for m in messages]
    if privileged_info is None:
        return messages
    block = f"{header}{privileged_info}"
    if messages and messages[0]["role"] == "system":
        messages[0]["content"] = f"{block}\n\n{messages[0]['content']}"
        return messages
    return [{"role": "system", "content": block}, *messages]


# ---------------------------------------------------------------------------------------------
# 3. Per-turn advantage: the critic π_θ's log-ratio against its frozen initial copy π_ref,
#       A(o_t, a_t, c) = (1/L_t) Σ_l [log π_θ(a_t^l | o_t, c, a_t^{<l}) − log π_ref(a_t^l | o_t, c, a_t^{<l})]
#    Every agent turn of a trajectory is a span of one token sequence, so one forward per model
#    scores them all; the trajectory's score is Σ_t A(o_t, a_t, c).
# ---------------------------------------------------------------------------------------------

#: How per-token log-ratios become a trajectory score (paper: "turn").
#:   turn       — mean over each turn's tokens, summed over turns (the paper's Eq.)
#:   none       — sum over all agent tokens (ablation: no per-turn normalisation)
#:   trajectory — mean over all agent tokens of the trajectory (what the public release computes)
NORMALIZATIONS = ("turn", "none", "trajectory")


@contextlib.contextmanager
def reference_of(model, ref_model):
    """Yield the reference model; for a PEFT model without one, the model with adapters off."""
    if ref_model is not None:
        yield ref_model
        return
    if hasattr(model, "disable_adapter"):
        with model.disable_adapter():
            yield model
        return
    raise ValueError("turn_advantages needs a ref_model (the frozen initial critic) unless the critic is a "
                     "PEFT model, whose base (adapters disabled) is then the reference")


def token_logratios(model, ref_model, input_ids, attention_mask, target_mask,
                    prefix_ids: torch.Tensor | None = None) -> torch.Tensor:
    """Per-token log π_θ − log π_ref on ``target_mask`` (the reference runs without grad);
    ``prefix_ids`` as in :func:`~sweet_agent.sweet_rl.logprobs.token_logprobs` (each model
    computes the shared prefix once)."""
    policy = token_logprobs(model, input_ids, attention_mask, target_mask, prefix_ids=prefix_ids)
    with torch.no_grad(), reference_of(model, ref_model) as ref:
        reference = token_logprobs(ref, input_ids, attention_mask, target_mask, prefix_ids=prefix_ids)
    return policy - reference


def aggregate_turns(per_token: torch.Tensor, turn_ids: torch.Tensor, num_turns: int,
                    normalize: str = "turn") -> tuple[torch.Tensor, torch.Tensor]:
    """Per-turn values ``[B, K]`` and trajectory scores ``[B]`` from per-token log-ratios.

    ``turn``: per-turn token means, summed. ``none``: per-turn sums, summed. ``trajectory``: the
    token mean over all agent tokens (per-turn values are then each turn's share of it).
    """
    if normalize not in NORMALIZATIONS:
        raise ValueError(f"normalize must be one of {NORMALIZATIONS}, got {normalize!r}")
    B = per_token.shape[0]
    K = max(int(num_turns), 1)
    onehot = torch.nn.functional.one_hot(turn_ids.long().clamp(min=0), K + 1)[..., 1:].to(per_token.dtype)
    sums = torch.einsum("bt,btk->bk", per_token, onehot)
    counts = onehot.sum(dim=1)
    if normalize == "turn":
        per_turn = sums / counts.clamp(min=1)
    elif normalize == "none":
        per_turn = sums
    else:
        total = counts.sum(dim=1, keepdim=True).clamp(min=1)
        per_turn = sums / total
    per_turn = per_turn * (counts > 0).to(per_turn.dtype)
    return per_turn, per_turn.sum(dim=1).reshape(B)


# ---------------------------------------------------------------------------------------------
# 4. The critic's loss on a trajectory pair: Bradley–Terry on the summed advantages,
#       −log σ(β Σ_t A(τ⁺_t) − β Σ_t A(τ⁻_t))
# ---------------------------------------------------------------------------------------------


def bradley_terry_loss(chosen_scores: torch.Tensor, rejected_scores: torch.Tensor, beta: float) -> torch.Tensor:
    """Mean over pairs of −log σ(β (s⁺ − s⁻))."""
    return -F.logsigmoid(beta * (chosen_scores - rejected_scores)).mean()


# ---------------------------------------------------------------------------------------------
# 5. Candidates per agent turn: the policy samples N next turns a_t^(1..N) from o_t (never c).
#    Optionally some start with a question opener (explore_candidates; not the paper's), so the
#    critic is offered "ask" against "answer".
# ---------------------------------------------------------------------------------------------


def turn_candidates(policy, conversation: Messages, n: int, sampling, seed: int | None, *, questions: int = 0,
                    exploration: ExplorationConfig | None = None, question_policy=None, plain=None) -> list:
    """The ``n`` candidate :class:`~sweet_agent.policies.base.Generation` s of one agent turn from
    ``policy`` (any :class:`~sweet_agent.policies.base.Policy`: the local model, or an
    OpenAI-compatible server): ``n - questions`` from :meth:`Policy.sample_n` with ``seed``,
    then ``questions`` started with a question opener and completed by ``question_policy``
    (default ``policy``; it must continue a forced start: a local model). ``plain``: the
    ``n - questions`` samples already drawn (a prefetching caller). Texts are stripped."""
    if not 0 <= questions <= n:
        raise ValueError(f"questions must be in [0, n={n}], got {questions}")
    if plain is None:
        plain = policy.sample_n(conversation, n - questions, sampling, seed) if n > questions else []
    asked = _question_candidates(question_policy or policy, conversation, questions, sampling, seed,
                                 exploration) if questions else []
    return [replace(g, text=g.text.strip()) for g in [*plain, *asked]]


def _question_candidates(policy, conversation: Messages, n: int, sampling, seed: int | None,
                         exploration: ExplorationConfig | None) -> list:
    """``n`` agent turns started with a question opener (seeded choice among the openers) and
    completed by ``policy``: the rollouts' :class:`ExploringPolicy` on this one conversation."""
    from sweet_agent.policies.base import derive_seed
    from sweet_agent.policies.exploration import ExploringPolicy

    config = replace(exploration or ExplorationConfig(), rate=1.0)  # every one of these n asks
    if seed is None:
        seed = random.getrandbits(62)
    seeds = [derive_seed(seed, "question-candidate", j) for j in range(n)]
    if any(config.opener_for(conversation, s) is None for s in seeds):
        raise ValueError(f"question candidates asked for agent turn {agent_turns_in(conversation) + 1}, but "
                         f"exploration covers only the first {config.turns} agent turn(s)")
    return ExploringPolicy(policy, config).generate([conversation] * n, sampling, seeds)


def question_count(n: int, fraction: float) -> int:
    """How many of a turn's ``n`` candidates start with a question opener for ``fraction`` (at
    least one when ``fraction > 0``, so a small ``n`` still gets a question)."""
    if not 0 <= fraction <= 1:
        raise ValueError(f"explore_candidates must be in [0, 1], got {fraction}")
    return 0 if fraction == 0 else min(n, max(1, round(fraction * n)))


def agent_turns_in(messages: Messages) -> int:
    """How many agent turns ``messages`` holds (the prompt of agent turn t holds t - 1)."""
    return sum(1 for m in messages if m.get("role") == "assistant")


# ---------------------------------------------------------------------------------------------
# 6. Step scores: each candidate a_t^(i) as the next agent turn, read by the critic in its view
#    (c + o_t + a_t^(i)): its advantage A(o_t, a_t^(i), c).
# ---------------------------------------------------------------------------------------------

#: How a candidate turn is scored (``ActorConfig.step_score``, ``--step_score``):
#:   critic-ref — ours: the critic's log-ratio against its own reference model, both reading the
#:                same privileged sequence (the advantage A of step 3)
#:   release    — the paper release's: the critic's token-mean log-probability of the candidate
#:                with the privileged info minus the *sampling policy's* token mean on its own
#:                prompt (no privileged info); no critic reference model is read
STEP_SCORES = ("critic-ref", "release")


def check_step_score(step_score: str) -> None:
    if step_score not in STEP_SCORES:
        raise ValueError(f"step_score must be one of {', '.join(STEP_SCORES)}; got {step_score!r}")


def critic_views(messages_before: Messages, candidates: Sequence[str], privileged_info: str | None) -> list[Messages]:
    """Each candidate as the next assistant turn after ``messages_before``, with ``privileged_info``."""
    return [with_privileged([*messages_before, {"role": "assistant", "content": c}], privileged_info)
            for c in candidates]


def candidate_logprobs(model, tokenizer, messages_before: Messages, candidates: Sequence[str],
                       privileged_info: str | None = None, normalize: str = "turn",
                       batch_size: int = 16, share_prefix: bool = True) -> list[float]:
    """Each candidate's token-mean log-probability (``normalize="none"``: the sum) as the next
    agent turn under ``model``, reading ``messages_before`` (with ``privileged_info`` when given).
    One batched forward per ``batch_size`` candidates, after one of their shared prefix."""
    def value(prefix, ids, attn, turn_ids):
        lp = token_logprobs(model, ids, attn, turn_ids > 0, prefix_ids=prefix)
        return aggregate_turns(lp, turn_ids, 1, normalize)[0][:, 0]

    return last_turn_values(model, tokenizer, critic_views(messages_before, candidates, privileged_info),
                            batch_size, value, share_prefix)


def score_candidates(critic, critic_ref, tokenizer, messages_before: Messages, candidates: Sequence[str],
                     privileged_info: str | None = None, normalize: str = "turn",
                     batch_size: int = 16, step_score: str = "critic-ref", policy=None,
                     policy_tokenizer=None, share_prefix: bool = True) -> list[float]:
    """The critic's score of each candidate as the next agent turn (one batched forward per
    model per ``batch_size`` candidates).

    ``step_score="critic-ref"`` (ours): the critic's advantage, its log-ratio against
    ``critic_ref`` on the privileged sequence. ``"release"`` (the paper release's): the critic's
    token mean with ``privileged_info`` minus ``policy``'s (the model that sampled the candidates,
    with ``policy_tokenizer``) on the prompt without it; ``critic_ref`` is not used. Both honour
    ``normalize`` ("none": token sums on both sides, the release's ``--use_sum``).
    ``share_prefix`` (default): each model computes the turn's prompt once and every candidate
    reads its cache (same scores, to float round-off, as scoring each whole sequence). A
    regression-head critic (the paper's ablation, ``reads_turn_values``) gives the value itself."""
    check_step_score(step_score)
    regression = bool(getattr(critic, "reads_turn_values", False))
    if step_score == "release":
        if regression:
            raise ValueError("step_score 'release' needs a log-probability critic; a regression critic "
                             "(--critic_type regression) has no token log-probabilities: use step_score critic-ref")
        if policy is None:
            raise ValueError("step_score 'release' needs the sampling policy (policy=...) to score against")
        privileged = candidate_logprobs(critic, tokenizer, messages_before, candidates, privileged_info,
                                        normalize, batch_size, share_prefix)
        sampling = candidate_logprobs(policy, policy_tokenizer or tokenizer, messages_before, candidates, None,
                                      normalize, batch_size, share_prefix)
        return [c - p for c, p in zip(privileged, sampling)]

    def value(prefix, ids, attn, turn_ids):
        if regression:  # its head reads whole sequences (share_prefix is off for it)
            return critic(input_ids=ids, attention_mask=attn, turn_ids=turn_ids, num_turns=1)[:, 0]
        lr = token_logratios(critic, critic_ref, ids, attn, turn_ids > 0, prefix_ids=prefix)
        return aggregate_turns(lr, turn_ids, 1, normalize)[0][:, 0]

    return last_turn_values(critic, tokenizer, critic_views(messages_before, candidates, privileged_info),
                            batch_size, value, share_prefix and not regression)


# ---------------------------------------------------------------------------------------------
# 7. Step pairs: a turn's candidates sorted by score; chosen from the top half, rejected from
#    the bottom half, pairs_per_turn distinct pairs drawn at random.
# ---------------------------------------------------------------------------------------------


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


def pair_rows(prompt: Messages, candidates: Sequence[str], scores: Sequence[float], pairs_per_turn: int,
              rng: random.Random) -> list[dict[str, Any]]:
    """The turn's step pairs (:func:`select_pairs`) as DPO rows in TRL's conversational format:
    ``{"prompt": o_t, "chosen": [a⁺], "rejected": [a⁻], "chosen_score", "rejected_score"}``."""
    return [{"prompt": prompt, "chosen": [{"role": "assistant", "content": candidates[c]}],
             "rejected": [{"role": "assistant", "content": candidates[r]}],
             "chosen_score": scores[c], "rejected_score": scores[r]}
            for c, r in select_pairs(candidates, scores, pairs_per_turn, rng)]


# ---------------------------------------------------------------------------------------------
# 8. The actor: DPO on the step pairs plus the NLL of the chosen turn,
#       −log σ(β [log π(a⁺|o_t)/π_ref(a⁺|o_t) − log π(a⁻|o_t)/π_ref(a⁻|o_t)]) + 0.01 · NLL(a⁺ | o_t)
#    which TRL's DPOTrainer computes with these settings (sweet_agent.actor.config.ActorConfig
#    takes them as its defaults; π_ref is the initial policy).
# ---------------------------------------------------------------------------------------------

#: DPO's β in the actor's loss (the paper's).
ACTOR_BETA = 0.1
#: TRL's loss terms of the actor: DPO's sigmoid loss and the NLL ("sft") of the chosen turn,
ACTOR_LOSS_TYPE = ("sigmoid", "sft")
#: weighted 1 and 0.01.
ACTOR_LOSS_WEIGHTS = (1.0, 0.01)

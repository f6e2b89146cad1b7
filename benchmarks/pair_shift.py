"""How a trained actor moved the log-probabilities of its own step pairs, by kind of turn.

WHY: DPO widens the margin between a pair's chosen and rejected turns, and it can do so by
making both less likely, the rejected one faster. The learning report's "What DPO did to its
pairs" (the trainer's log) gives that over all pairs; this splits it by agent turn and by what
each side is (a question, an answer, or another turn: a draft or a statement), which is what
decides behaviour: e.g. whether SWEET-RL's actor made the first-turn questions its critic chose
any likelier than the model it started from, or only the answers it rejected less likely.

For every distinct candidate of the pairs (a turn's prompt and one agent turn), the summed
log-probability of the turn's tokens under ``--policy`` (a trained model or LoRA adapter) and
under ``--base`` (the model it started from), read with the chat template as the step-pair stage
scores them (:func:`sweet_agent.sweet_rl.algorithm.candidate_logprobs`); the shift is policy minus
base. Printed: per agent-turn group and per side and kind, the candidates, their mean shift (nats)
and how many rose; and for the pairs that set a question against an answer, how often the
policy's margin (chosen minus rejected) grew and how often the question is the likelier turn
outright, under the base model and under the policy; with ``--greedy``, what each model plays
greedily at the pairs' prompts.

    python benchmarks/pair_shift.py --pairs RUN/pairs/s1.jsonl --policy RUN/models/sweet/s1/adapter \\
        --agent-turns 1 --out shift.json
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from colbench_gym.jsonl import write_text_atomic  # noqa: E402 - after the sys.path set-up above
from sweet_agent.evaluation.metrics import PAIR_TURN_KINDS as KINDS  # noqa: E402
from sweet_agent.evaluation.metrics import pair_turn_kind as kind_of  # noqa: E402


def turn_group(row: Mapping[str, Any]) -> str:
    """``"1"`` for a first agent turn, ``"2+"`` for a later one (the pairs' ``agent_turn``, 1-based)."""
    return "1" if int(row["agent_turn"]) == 1 else "2+"


def read_pairs(path: Path, agent_turns: set[int] | None) -> list[dict[str, Any]]:
    rows = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    missing = [i for i, r in enumerate(rows) if not {"prompt", "chosen", "rejected", "agent_turn"} <= set(r)
               or not isinstance(r["agent_turn"], int)]
    if missing:
        raise ValueError(f"{path}: row {missing[0] + 1} lacks prompt/chosen/rejected or an integer agent_turn; pass a step-pair "
                         "file (train-actor --pairs_out, or a model's step_pairs.jsonl)")
    return [r for r in rows if agent_turns is None or int(r["agent_turn"]) in agent_turns]


def candidate_logps(pairs: Sequence[Mapping[str, Any]], policy, base, tokenizer,
                    batch_size: int = 8) -> dict[tuple[str, str], tuple[float, float]]:
    """``(prompt key, candidate text) -> (log p_policy, log p_base)`` (summed over the turn's
    tokens) for every distinct candidate of ``pairs``, one batched pass per turn and model."""
    from sweet_agent.sweet_rl.algorithm import candidate_logprobs

    turns: dict[str, tuple[list[dict[str, Any]], list[str]]] = {}
    for r in pairs:
        key = json.dumps(r["prompt"], sort_keys=True)
        cands = turns.setdefault(key, (list(r["prompt"]), []))[1]
        for side in ("chosen", "rejected"):
            text = r[side][0]["content"]
            if text not in cands:
                cands.append(text)
    out: dict[tuple[str, str], tuple[float, float]] = {}
    for key, (prompt, cands) in turns.items():
        lp = candidate_logprobs(policy, tokenizer, prompt, cands, normalize="none", batch_size=batch_size)
        lb = candidate_logprobs(base, tokenizer, prompt, cands, normalize="none", batch_size=batch_size)
        out.update({(key, c): (float(a), float(b)) for c, a, b in zip(cands, lp, lb)})
    return out


def summarize(pairs: Sequence[Mapping[str, Any]], logps: Mapping[tuple[str, str], tuple[float, float]]) -> dict[str, Any]:
    """Per agent-turn group, side and kind: distinct candidates, mean shift (policy minus base),
    how many rose; and per group, of the question-against-answer pairs: how many widened their
    margin under the policy, and in how many the question is the likelier turn outright under
    the base model and under the policy (what sampling it needs, not only what DPO compares)."""
    sides: dict[tuple[str, str, str], dict[tuple[str, str], float]] = {}
    qa: dict[str, dict[str, int]] = {}
    for r in pairs:
        key, g = json.dumps(r["prompt"], sort_keys=True), turn_group(r)
        kinds = {side: kind_of(r[side]) for side in ("chosen", "rejected")}
        for side in ("chosen", "rejected"):
            cand = (key, r[side][0]["content"])
            sides.setdefault((g, side, kinds[side]), {})[cand] = logps[cand][0] - logps[cand][1]
        if {kinds["chosen"], kinds["rejected"]} == {"question", "answer"}:
            (cp, cb), (rp, rb) = logps[(key, r["chosen"][0]["content"])], logps[(key, r["rejected"][0]["content"])]
            q_first = kinds["chosen"] == "question"
            c = qa.setdefault(g, {"pairs": 0, "chose_question": 0, "margin_grew": 0,
                                  "question_likelier_base": 0, "question_likelier_policy": 0})
            c["pairs"] += 1
            c["chose_question"] += q_first
            c["margin_grew"] += (cp - rp) > (cb - rb)
            (qb, ab), (qp, ap) = ((cb, rb), (cp, rp)) if q_first else ((rb, cb), (rp, cp))
            c["question_likelier_base"] += qb > ab
            c["question_likelier_policy"] += qp > ap
    rows = [{"agent_turns": g, "side": side, "kind": kind, "candidates": len(v),
             "mean_shift": sum(v.values()) / len(v), "rose": sum(x > 0 for x in v.values())}
            for (g, side, kind), v in sorted(sides.items())]
    return {"rows": rows, "question_vs_answer": dict(sorted(qa.items()))}


def greedy_kinds(pairs: Sequence[Mapping[str, Any]], spec: str, max_new_tokens: int) -> dict[str, dict[str, int]]:
    """Per agent-turn group, the kinds of the turn ``spec`` plays greedily at each distinct prompt
    of ``pairs``, decoded as the benchmark's evaluations decode (``load_policy``'s bf16, temperature
    0): what the model does at those turns, where the pairs say only what it prefers between two
    given candidates."""
    from sweet_agent.policies import SamplingParams, load_policy

    prompts: dict[str, tuple[str, list[dict[str, Any]]]] = {}
    for r in pairs:
        prompts.setdefault(json.dumps(r["prompt"], sort_keys=True), (turn_group(r), list(r["prompt"])))
    policy = load_policy(spec, quiet=True)
    gens = policy.generate([p for _, p in prompts.values()], SamplingParams(max_new_tokens=max_new_tokens, temperature=0.0),
                           seeds=[0] * len(prompts))
    out: dict[str, dict[str, int]] = {}
    for (g, _), gen in zip(prompts.values(), gens):
        k = kind_of([{"role": "assistant", "content": gen.text}])
        out.setdefault(g, dict.fromkeys(KINDS, 0))[k] += 1
    return dict(sorted(out.items()))


def markdown(summary: Mapping[str, Any], title: str) -> str:
    lines = [f"### {title}", "", "| agent turns | side | kind | candidates | mean shift (nats) | rose |",
             "|---|---|---|---|---|---|"]
    lines += [f"| {r['agent_turns']} | {r['side']} | {r['kind']} | {r['candidates']} | {r['mean_shift']:+.1f} | "
              f"{r['rose']} of {r['candidates']} |" for r in summary["rows"]]
    if summary["question_vs_answer"]:
        lines += ["", "Question-against-answer pairs: " + "; ".join(
            f"agent turns {g}: {v['pairs']} pairs, the question chosen in {v['chose_question']}, the margin (chosen − "
            f"rejected) grew in {v['margin_grew']}, the question likelier than the answer outright in "
            f"{v['question_likelier_base']} under the base model and {v['question_likelier_policy']} under the policy"
            for g, v in summary["question_vs_answer"].items()) + "."]
    if summary.get("greedy"):
        lines += ["", "The greedy turn at the pairs' distinct prompts (questions / answers / other): " + "; ".join(
            f"agent turns {g}: base {b['question']} / {b['answer']} / {b['other']}, policy "
            f"{summary['greedy']['policy'][g]['question']} / {summary['greedy']['policy'][g]['answer']} / "
            f"{summary['greedy']['policy'][g]['other']}" for g, b in summary["greedy"]["base"].items()) + "."]
    lines += ["", "Shift: log p(turn | prompt) under the policy minus under the base model, summed over the turn's "
                  "tokens, per distinct candidate on the side it stands in a pair (a candidate chosen in one pair "
                  "and rejected in another counts on both sides)."]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=Path, required=True, help="step pairs (train-actor --pairs_out, or step_pairs.jsonl)")
    ap.add_argument("--policy", required=True, help="the trained actor: a model folder or a LoRA adapter")
    ap.add_argument("--base", default="default", help="the model it started from (default: the embedded default)")
    ap.add_argument("--agent-turns", default=None, help="comma-separated agent turns to read (default: all)")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--greedy", action="store_true",
                    help="also play the greedy turn of the policy and the base at each distinct prompt")
    ap.add_argument("--max-new-tokens", type=int, default=128,
                    help="the greedy turn's length: the rollouts' (protocol v2's backend: 128)")
    ap.add_argument("--out", type=Path, default=None, help="write the summary as JSON too")
    args = ap.parse_args(argv)
    try:
        turns = {int(x) for x in args.agent_turns.split(",")} if args.agent_turns else None
        pairs = read_pairs(args.pairs, turns)
        if not pairs:
            raise ValueError(f"{args.pairs}: no pair at agent turns {args.agent_turns}; pass other --agent-turns")
    except (OSError, ValueError) as e:
        print(f"pair_shift: {e}", file=sys.stderr)
        return 2
    import torch

    from sweet_agent.training.models import load_model

    t0 = time.time()
    with torch.inference_mode():
        policy, tok = load_model(args.policy, args.dtype)
        base, _ = load_model(args.base, args.dtype)
        policy.eval(), base.eval()
        logps = candidate_logps(pairs, policy, base, tok, args.batch_size)
    del policy, base
    greedy = {"base": greedy_kinds(pairs, args.base, args.max_new_tokens),
              "policy": greedy_kinds(pairs, args.policy, args.max_new_tokens)} if args.greedy else None
    command = "python benchmarks/pair_shift.py " + " ".join(  # what made this file, to run it again
        shlex.quote(a) for a in (sys.argv[1:] if argv is None else argv))
    summary = {"command": command, "pairs_file": str(args.pairs), "policy": str(args.policy), "base": str(args.base),
               "agent_turns": sorted(turns) if turns else "all", "pairs": len(pairs), **summarize(pairs, logps),
               "greedy": greedy,
               "seconds": round(time.time() - t0, 1)}
    print(markdown(summary, f"How {args.policy} moved its pairs ({len(pairs)} pairs of {args.pairs.name})"))
    if args.out:
        write_text_atomic(args.out, json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

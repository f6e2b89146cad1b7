"""Critic and candidate-sampling costs, measured side by side in one run.

1. Critic scoring of a trajectory: SWEET's one-pass scoring (every agent turn is a span of one
   sequence; one forward per model) against per-turn scoring (one forward per turn on the prefix
   through that turn, as a naive port does). Prints forward passes, tokens processed and wall
   time per trajectory, and checks both give the same advantages.
2. Candidate sampling for the actor: N candidates in one batched ``generate`` call against N
   sequential calls. Target: ≥ 5× faster.

Uses the default policy model (Qwen2.5-Coder-0.5B-Instruct) when it is available offline, else
a tiny random model (counts stay meaningful; times do not). ``--model PATH`` picks another.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402 - after the sys.path set-up above

from sweet_agent.actor.candidates import sample_candidates  # noqa: E402
from sweet_agent.critic.advantages import turn_advantages  # noqa: E402
from sweet_agent.sweet_rl.algorithm import token_logratios, with_privileged  # noqa: E402
from sweet_agent.training_data.spans import assistant_token_spans  # noqa: E402


def load(spec: str | None, dtype: torch.dtype, tiny: bool = False):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = None
    if tiny:
        pass
    elif spec:
        path = spec
    else:
        try:
            from sweet_agent.policies.default_model import default_model_status, resolve_model_path

            if default_model_status().get("ready"):
                path = resolve_model_path("default", quiet=True)
        except Exception:  # noqa: BLE001 - fall back to the tiny model
            path = None
    if path is None:
        sys.path.insert(0, str(ROOT / "tests" / "training"))
        from tiny_model import build_tiny_model, build_tiny_tokenizer

        tok = build_tiny_tokenizer()
        return "tiny random Qwen2 (times not meaningful)", build_tiny_model(tok, 0), build_tiny_model(tok, 1), tok
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype).eval()
    ref = AutoModelForCausalLM.from_pretrained(path, dtype=dtype).eval()
    with torch.no_grad():  # make the critic differ from its reference, as after training
        g = torch.Generator().manual_seed(0)
        for p in model.parameters():
            p.add_(1e-3 * torch.randn(p.shape, generator=g).to(p.dtype))
    return str(path), model, ref, tok


def trajectory(turns: int) -> list[dict[str, str]]:
    msgs = [{"role": "user", "content": "I need a python function shipping_cost(weight, zone) for my online shop. "
                                        "It should tell customers what they pay."}]
    questions = ["What are the zones called and what does each cost per kilogram?",
                 "Is there a minimum charge or a free-shipping threshold?",
                 "How should weights be rounded: up to the next kilogram or exact?",
                 "What should happen for an unknown zone: raise an error or use a default?",
                 "Should the result be rounded to cents?"]
    answers = ["Zones are local at 2 per kg, national at 5 and international at 12.",
               "Minimum charge is 4. Orders over 30 kg ship free nationally.",
               "Round the weight up to the next whole kilogram.",
               "Unknown zones cost like international.",
               "Yes, two decimals."]
    for t in range(turns - 1):
        msgs += [{"role": "assistant", "content": questions[t % 5]}, {"role": "user", "content": answers[t % 5]}]
    msgs.append({"role": "assistant", "content": "I WANT TO ANSWER:\n```python\nimport math\n\ndef shipping_cost(weight, zone):\n"
                 "    rate = {'local': 2, 'national': 5}.get(zone, 12)\n    kg = math.ceil(weight)\n"
                 "    if zone == 'national' and kg > 30:\n        return 0.0\n    return round(max(4, rate * kg), 2)\n```"})
    return msgs


PRIV = ("import math\n\ndef shipping_cost(weight, zone):\n    rate = {'local': 2, 'national': 5}.get(zone, 12)\n"
        "    kg = math.ceil(weight)\n    if zone == 'national' and kg > 30:\n        return 0.0\n"
        "    return round(max(4, rate * kg), 2)\n")


class Counter:
    def __init__(self, *models):
        self.passes = 0
        self.tokens = 0
        self.hooks = [m.register_forward_pre_hook(self._hook, with_kwargs=True) for m in models]

    def _hook(self, module, args, kwargs):
        ids = kwargs.get("input_ids", args[0] if args else None)
        self.passes += 1
        self.tokens += int(ids.numel())

    def close(self):
        for h in self.hooks:
            h.remove()


@torch.no_grad()
def per_turn_scoring(model, ref, tok, messages, priv):
    """The naive way: for each agent turn, a forward over the prefix through that turn."""
    full = with_privileged(messages, priv)
    out = []
    for i, m in enumerate(full):
        if m["role"] != "assistant":
            continue
        ids, spans = assistant_token_spans(tok, full[: i + 1])
        s, e = spans[-1]
        input_ids = torch.tensor([ids])
        mask = torch.zeros_like(input_ids, dtype=torch.bool)
        mask[0, s:e] = True
        lr = token_logratios(model, ref, input_ids, torch.ones_like(input_ids), mask)
        out.append(float(lr.sum() / mask.sum()))
    return out


def bench_critic(model, ref, tok, turns_list, repeats):
    print("\n== critic: one pass per trajectory vs one pass per turn (per trajectory, both models)")
    print(f"{'turns':>5} | {'tokens':>6} | {'one-pass: passes':>16} {'tokens':>8} {'time s':>7} | "
          f"{'per-turn: passes':>16} {'tokens':>8} {'time s':>7} | {'token ratio':>11} {'time ratio':>10} | max |ΔA|")
    for turns in turns_list:
        msgs = trajectory(turns)
        n_tok = len(assistant_token_spans(tok, with_privileged(msgs, PRIV))[0])
        res = {}
        for name, fn in (("one", lambda m=msgs: turn_advantages(model, ref, tok, m, PRIV)),
                         ("per", lambda m=msgs: per_turn_scoring(model, ref, tok, m, PRIV))):
            fn()  # warm-up
            c = Counter(model, ref)
            t0 = time.perf_counter()
            for _ in range(repeats):
                vals = fn()
            dt = (time.perf_counter() - t0) / repeats
            c.close()
            res[name] = (c.passes / repeats, c.tokens / repeats, dt, vals)
        (p1, t1, d1, v1), (p2, t2, d2, v2) = res["one"], res["per"]
        diff = max(abs(a - b) for a, b in zip(v1, v2))
        print(f"{turns:>5} | {n_tok:>6} | {p1:>16.0f} {t1:>8.0f} {d1:>7.2f} | {p2:>16.0f} {t2:>8.0f} {d2:>7.2f} | "
              f"{t2 / t1:>10.1f}x {d2 / d1:>9.1f}x | {diff:.1e}")


def bench_sampling(model, tok, n, max_new_tokens):
    print(f"\n== candidate sampling: {n} candidates of up to {max_new_tokens} new tokens for one agent turn")
    conv = [{"role": "system", "content": "You are a helpful software engineer. Ask clarifying questions."},
            *trajectory(3)[:-1]]
    # Force full-length candidates so both ways decode the same number of tokens.
    model.generation_config.min_new_tokens = max_new_tokens
    try:
        sample_candidates(model, tok, conv, 2, max_new_tokens=4, seed=0)  # warm-up
        t0 = time.perf_counter()
        batched = sample_candidates(model, tok, conv, n, max_new_tokens=max_new_tokens, seed=0)
        t_b = time.perf_counter() - t0
        t0 = time.perf_counter()
        seq = sample_candidates(model, tok, conv, n, max_new_tokens=max_new_tokens, batch_size=1, seed=0)
        t_s = time.perf_counter() - t0
    finally:
        model.generation_config.min_new_tokens = None
    print(f"{'mode':>10} | {'generate calls':>14} | {'time s':>7} | {'tok/s':>7} | distinct candidates")
    print(f"{'batched':>10} | {1:>14} | {t_b:>7.2f} | {n * max_new_tokens / t_b:>7.1f} | {len(set(batched))}")
    print(f"{'sequential':>10} | {n:>14} | {t_s:>7.2f} | {n * max_new_tokens / t_s:>7.1f} | {len(set(seq))}")
    ratio = t_s / t_b
    print(f"batched speed-up: {ratio:.1f}x (target >= 5x: {'MET' if ratio >= 5 else 'NOT MET'})")
    return ratio


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=None, help="checkpoint dir (default: the default policy model if ready)")
    ap.add_argument("--tiny", action="store_true", help="use a tiny random model (counts only; fast)")
    ap.add_argument("--turns", default="2,5,10", help="agent turns per trajectory, comma-separated")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--candidates", type=int, default=16)
    ap.add_argument("--max-new-tokens", type=int, default=24)
    ap.add_argument("--critic-dtype", default="float32", choices=["float32", "bfloat16"])
    ap.add_argument("--sampling-dtype", default="bfloat16", choices=["float32", "bfloat16"])
    args = ap.parse_args(argv)
    torch.manual_seed(0)
    name, model, ref, tok = load(args.model, getattr(torch, args.critic_dtype), args.tiny)
    print(f"model: {name}; torch threads: {torch.get_num_threads()}")
    bench_critic(model, ref, tok, [int(x) for x in args.turns.split(",")], args.repeats)
    del ref
    if args.sampling_dtype != args.critic_dtype:
        model = model.to(getattr(torch, args.sampling_dtype))
    bench_sampling(model, tok, args.candidates, args.max_new_tokens)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The step-pair stage's candidates: the local transformers path against OpenAI-compatible
servers, side by side in one run, on the same offline records and the same model.

Every path runs the real stage (``sweet_agent.actor.candidates.build_step_pairs``: sample the
candidates of every agent turn, score them with a critic, pair them), record by record in turn,
so a change of machine load mid-run hits every path alike:

- ``local transformers``: the policy in this process (Hugging Face ``generate``, one call per turn
  with ``num_return_sequences``; bf16; ``--device``, default ``auto``);
- ``scripts/llama_server.py (n batched)``: llama.cpp answering the turn's one request for ``n``
  choices in one batch (prompt decoded once, ``n`` sequences decoded together);
- ``llama_cpp.server``: llama-cpp-python's own server, which ignores ``n`` (the stage then sends
  ``n`` requests, served one sequence at a time; each reuses the cached prompt);
- or any running server given by ``--base-url`` (e.g. vLLM on a GPU).

The local servers run the default model's GGUF file (the weights the converted checkpoint
holds), each started as a subprocess in its own process group and stopped by its group id.

Printed: candidates/s and generated tokens/s of each path (of its sampling, i.e. the stage
without the critic's time, and of the whole stage), the critic's scoring time per turn, distinct
candidates per turn and candidates cut at ``--max-new-tokens``, each server's ratio to the local
path, and the machine load (``os.getloadavg``) before, per record and after. Target (issue 23): a
server >= 3x the local path in candidates/s.

llama.cpp is not a dependency of the project: install it once, on demand::

    pip install "llama-cpp-python[server]==0.3.36"   # compiles llama.cpp (~20-35 min on 2 cores)

(a wheel built before is reused from pip's cache). Both servers run with llama.cpp's extra CPU
buffer types off (weight repacking / AMX): this machine's AMX matmul of the build crashed
(SIGSEGV in ``ggml_backend_amx_mul_mat``) on the default model; ``--extra-bufts`` turns them on.

Run: ``python benchmarks/bench_step_pairs.py`` (``--help`` for sizes; ``--records FILE`` for
your own offline records).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

sys.path.insert(0, str(ROOT / "scripts"))
from llama_server import ServerProcess as _Launcher  # noqa: E402 - after the path set-up

INSTALL = 'pip install "llama-cpp-python[server]==0.3.36"'

#: Runs llama.cpp's OpenAI-compatible server; ``use_extra_bufts`` off unless asked (see above).
_LAUNCHER = """
import sys
sys.path.insert(0, {scripts!r})
if not {extra}:
    from llama_server import disable_extra_bufts
    disable_extra_bufts()
from llama_cpp.server.__main__ import main
sys.argv = ["llama_cpp.server"] + sys.argv[1:]
main()
"""


class ServerProcess(_Launcher):
    """:class:`scripts/llama_server.ServerProcess` plus llama-cpp-python's own server."""

    @classmethod
    def llama_cpp(cls, gguf: Path, threads: int, extra_bufts: bool, log: Path) -> ServerProcess:
        """llama-cpp-python's ``llama_cpp.server`` (one sequence at a time; ignores ``n``)."""
        return cls("llama_cpp.server", [sys.executable, "-c", _LAUNCHER.format(extra=extra_bufts, scripts=str(ROOT / "scripts")), "--model", str(gguf),
                                        "--host", "127.0.0.1", "--port", "{port}", "--n_ctx", "4096",
                                        "--n_threads", str(threads), "--n_threads_batch", str(threads),
                                        "--verbose", "false"], log)

    def __enter__(self) -> ServerProcess:
        super().__enter__()
        print(f"[bench] {self.name} up in {self.started_in:.1f} s at {self.base_url} (pid {self.proc.pid})")
        return self


_QUESTIONS = ("Before I write it, one question: what should it return when nothing applies?",
              "What are the exact names of the inputs, and their types?",
              "Should the result be rounded, and how?",
              "Are there limits or special cases I should know about?")


def scripted_agent(questions: int):
    """Plays offline records without a model: ``questions`` questions, then an answer (the prompts
    the policy sees are what matter here: system prompt, task, the person's replies)."""
    from sweet_agent.policies.base import Generation, Policy

    class Scripted(Policy):
        name = "scripted"

        def generate(self, conversations, sampling=None, seeds=None):
            out = []
            for c in conversations:
                k = sum(m["role"] == "assistant" for m in c)
                out.append(Generation(_QUESTIONS[k % len(_QUESTIONS)] if k < questions else
                                      "I WANT TO ANSWER:\ndef solution(*args):\n    return 0\n"))
            return out

    return Scripted()


def offline_records(path: str | None, episodes: int, questions: int, out_dir: Path) -> list[dict]:
    from sweet_agent.training_data.records import load_records

    if path:
        return load_records(path)
    from sweet_agent.rollout.collector import RolloutConfig, collect

    out = out_dir / "records.jsonl"
    collect(scripted_agent(questions), RolloutConfig(tasks="embedded:train", num_tasks=episodes,
                                                     max_turns=questions + 1), out, progress=False)
    return load_records(out)


def run_stage(name, records, policy, tok, critic, cfg, candidates=None, turns_in_flight=1) -> dict:
    from sweet_agent.actor.candidates import build_step_pairs, local_policy

    stats: dict = {}
    timings: dict = {}
    sampled: list[list[str]] = []  # every turn's candidates, as the stage received them
    src = candidates if candidates is not None else local_policy(policy, tok, cfg.num_candidates)
    if getattr(src, "prefers_async", False):
        orig_async = src.asample_n

        async def recording_async(*a, **k):
            gens = await orig_async(*a, **k)
            sampled.append([g.text for g in gens])
            return gens

        src.asample_n = recording_async
    else:
        orig = src.sample_n

        def recording(*a, **k):
            gens = orig(*a, **k)
            sampled.append([g.text for g in gens])
            return gens

        src.sample_n = recording
    t0 = time.perf_counter()
    rows = build_step_pairs(records, policy, tok, critic, cfg, seed=0, stats=stats, timings=timings,
                            candidates=src, turns_in_flight=turns_in_flight)
    wall = time.perf_counter() - t0
    turns = max(1, timings["sampled_turns"])
    sampling_s = max(1e-9, wall - timings["scoring_seconds"])
    return {"name": name, "turns": timings["sampled_turns"], "candidates": timings["sampled_candidates"],
            "tokens": timings["sampled_tokens"], "wall": wall, "sampling": sampling_s,
            "critic_per_turn": timings["scoring_seconds"] / turns, "pairs": len(rows),
            "cut": stats.get("truncated_candidates", 0), "failed": stats.get("failed_turns", 0),
            "distinct": (sum(len(set(t)) for t in sampled) / len(sampled)) if sampled else None,
            "from": stats.get("candidates_from")}


def _prompt_tokens(tok, conv) -> int:
    text = tok.apply_chat_template(conv, tokenize=False, add_generation_prompt=True)
    return len(tok(text, add_special_tokens=False)["input_ids"])


def _filler_system(tok, conv, prompt_tokens: int):
    """``conv`` with its system message lengthened to about ``prompt_tokens`` chat-templated tokens
    (the paper's prompts run to ~1,500 tokens; the embedded records' to a few hundred)."""
    out = [dict(m) for m in conv]
    if out and out[0]["role"] == "system":
        base = out[0]["content"]
    else:
        out, base = [{"role": "system", "content": ""}, *out], ""
    have = _prompt_tokens(tok, conv)
    words = prompt_tokens - have
    for _ in range(4):  # a filler word is not one token: measure, then rescale the word count
        if words <= 0:
            return conv
        out[0]["content"] = (base + "\n" if base else "") + " ".join(f"note{i % 97}" for i in range(words))
        got = _prompt_tokens(tok, out)
        if abs(got - prompt_tokens) <= max(8, prompt_tokens // 100):
            break
        words = round(words * (prompt_tokens - have) / max(1, got - have))
    return out


def _text_of_tokens(tok, n: int, seed: int) -> str:
    """A text of about ``n`` tokens (words vary with ``seed``; a word is not one token: measured
    and rescaled)."""
    words = n
    for _ in range(4):
        text = " ".join([f"option{seed}"] + [f"w{(seed * 7 + j) % 89}" for j in range(max(0, words - 1))])
        got = len(tok(text, add_special_tokens=False)["input_ids"])
        if abs(got - n) <= max(2, n // 50):
            break
        words = max(1, round(words * n / max(1, got)))
    return text


def critic_scaling(critic, tok, turns, records, num_candidates: int, candidate_tokens: int, prompt_tokens: int,
                   repeats: int) -> list[dict]:
    """The critic's seconds per turn scoring 1 and ``num_candidates`` candidates of about
    ``candidate_tokens`` tokens, with the turn's prompt computed once (``share_prefix``, the
    default) and with every candidate's whole sequence, in one run, mode by mode per turn."""
    import torch

    from sweet_agent.sweet_rl.algorithm import critic_views, score_candidates
    from sweet_agent.sweet_rl.logprobs import last_turn_batch
    from sweet_agent.training_data import records as R

    cuda = next(critic.model.parameters()).device.type == "cuda"

    def tokens_processed(conv, priv, n: int) -> int:
        """Tokens one model runs to score ``n`` candidates with the prompt computed once: the shared
        prefix once, then every row's own tokens (the pads after a row are not counted)."""
        prefix, _, attn, _ = last_turn_batch(tok, critic_views(conv, cands[:n], priv), "cpu", share_prefix=True)
        return (0 if prefix is None else prefix.shape[-1]) + int(attn.sum())

    def sync():
        if cuda:
            torch.cuda.synchronize()

    cands = [_text_of_tokens(tok, candidate_tokens, i) for i in range(num_candidates)]
    cand_lens = [len(tok(c, add_special_tokens=False)["input_ids"]) for c in cands]
    modes = [(share, n) for share in (True, False) for n in (1, num_candidates)]
    times = {m: [] for m in modes}
    prompt_lens, floors = [], []
    for ri, _, conv in turns:
        conv = _filler_system(tok, conv, prompt_tokens)
        prompt_lens.append(_prompt_tokens(tok, conv))
        priv = R.privileged_info(records[ri])
        floors.append(tokens_processed(conv, priv, num_candidates) / tokens_processed(conv, priv, 1))
        for share, n in modes:
            for rep in range(repeats + 1):  # the first is a warm-up
                sync()
                t0 = time.perf_counter()
                score_candidates(critic.model, critic.ref, tok, conv, cands[:n], priv, critic.normalize,
                                 batch_size=num_candidates, share_prefix=share)
                sync()
                if rep:
                    times[(share, n)].append(time.perf_counter() - t0)
    rows = []
    for share in (True, False):
        one, many = (sum(times[(share, n)]) / len(times[(share, n)]) for n in (1, num_candidates))
        rows.append({"mode": "prompt once (share_prefix)" if share else "whole sequences", "one": one, "many": many,
                     "ratio": many / one, "prompt_tokens": sum(prompt_lens) / len(prompt_lens),
                     "candidate_tokens": sum(cand_lens) / len(cand_lens)})
    # what a compute-bound scorer cannot beat with the prompt once: the ratio of the tokens it runs
    rows[0]["floor"] = sum(floors) / len(floors)
    rows[0]["ratio_to_floor"] = rows[0]["ratio"] / rows[0]["floor"]
    return rows


def _add(totals: dict[str, dict], part: dict) -> None:
    """Sum one chunk's result into its path's totals (distinct candidates: turn-weighted)."""
    t = totals.setdefault(part["name"], {**part, "turns": 0, "candidates": 0, "tokens": 0, "wall": 0.0,
                                         "sampling": 0.0, "critic": 0.0, "pairs": 0, "cut": 0, "failed": 0,
                                         "distinct_sum": 0.0})
    for key in ("turns", "candidates", "tokens", "wall", "sampling", "pairs", "cut", "failed"):
        t[key] += part[key]
    t["critic"] += part["critic_per_turn"] * part["turns"]
    t["distinct_sum"] += (part["distinct"] or 0.0) * part["turns"]
    t["critic_per_turn"] = t["critic"] / max(1, t["turns"])
    t["distinct"] = t["distinct_sum"] / max(1, t["turns"])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", help="offline trajectory JSONL (default: a few scripted episodes of embedded:train)")
    ap.add_argument("--episodes", type=int, default=3, help="scripted episodes when --records is not given")
    ap.add_argument("--questions", type=int, default=1, help="questions before the answer in the scripted episodes "
                                                              "(more: longer dialogues, longer prompts)")
    ap.add_argument("--turns", type=int, default=6, help="agent turns used (the first N of the stage)")
    ap.add_argument("--num-candidates", type=int, default=4, help="per turn (train-actor --config cpu: 4)")
    ap.add_argument("--max-new-tokens", type=int, default=128, help="candidate cap (train-actor --config cpu: 128)")
    ap.add_argument("--device", default="auto", help="device of the local path and of the critic")
    ap.add_argument("--base-url", help="an already running OpenAI-compatible server (e.g. vLLM) instead of starting "
                                       "llama.cpp's")
    ap.add_argument("--model-name", default="default", help="model name sent to --base-url")
    ap.add_argument("--server", choices=("batched", "llama_cpp", "both", "none"), default="both",
                    help="which local llama.cpp server(s): scripts/llama_server.py (n choices in one batch), "
                         "llama-cpp-python's llama_cpp.server (one sequence at a time), both, or none (the local "
                         "path alone, e.g. on a GPU without llama.cpp)")
    ap.add_argument("--server-threads", type=int, default=os.cpu_count() or 2, help="llama.cpp server threads")
    ap.add_argument("--extra-bufts", action="store_true", help="keep llama.cpp's extra CPU buffer types (AMX, repack)")
    ap.add_argument("--turns-in-flight", type=int, default=0,
                    help="turns requested ahead from the server while the critic scores (default 0: none, so "
                         "sampling and scoring times separate cleanly; on 2 cores they share the CPU anyway)")
    ap.add_argument("--skip-local", action="store_true", help="only the server path")
    ap.add_argument("--model", default="default",
                    help="policy and critic checkpoint (default: the default model; e.g. a random-weight model of "
                         "a real shape on a GPU with no weights)")
    ap.add_argument("--critic-scaling", action="store_true",
                    help="only the critic: seconds per turn scoring 1 and --num-candidates candidates, with the "
                         "prompt computed once and with whole sequences (target: N candidates <= 3x one)")
    ap.add_argument("--candidate-tokens", type=int, default=128, help="--critic-scaling: tokens per candidate")
    ap.add_argument("--prompt-tokens", type=int, default=0,
                    help="--critic-scaling: lengthen each turn's prompt to about this many tokens (0: as recorded)")
    ap.add_argument("--repeats", type=int, default=2, help="--critic-scaling: timed repeats per turn and mode")
    ap.add_argument("--json-out", help="also write the results as JSON here")
    args = ap.parse_args(argv)

    import torch

    from sweet_agent.actor.candidates import stage_turns
    from sweet_agent.actor.config import StepPairConfig
    from sweet_agent.critic.loading import LoadedCritic
    from sweet_agent.devices import resolve_device
    from sweet_agent.policies.default_model import gguf_path, resolve_model_path
    from sweet_agent.policies.openai_policy import OpenAIPolicy
    from sweet_agent.training.models import load_model

    load_before = os.getloadavg()
    device = resolve_device(args.device)
    print(f"[bench] load average before: {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f} "
          f"on {os.cpu_count()} cores; device {device}; torch threads {torch.get_num_threads()}")
    if not args.base_url and not args.critic_scaling and args.server != "none":
        try:
            import llama_cpp  # noqa: F401
            if args.server != "batched":
                import llama_cpp.server  # noqa: F401
        except ImportError:
            print(f"[bench] skipped: llama.cpp's server (llama-cpp-python) is not installed; it is not a dependency "
                  f"of the project: install it once with `{INSTALL}` (or pass --base-url of a running server)")
            return 0
    tmp = Path(tempfile.mkdtemp(prefix="bench_step_pairs."))
    records = offline_records(args.records, args.episodes, args.questions, tmp)
    cfg = StepPairConfig(num_candidates=args.num_candidates, max_new_tokens=args.max_new_tokens, temperature=1.0,
                         pairs_per_turn=1)
    turns = stage_turns(records, cfg)
    keep = {ri for ri, _, _ in turns[: args.turns]}
    records = [r for i, r in enumerate(records) if i in keep]
    turns = stage_turns(records, cfg)
    path = resolve_model_path(args.model, quiet=True)
    critic_model, tok = load_model(path, "bfloat16", device=device)
    ref, _ = load_model(path, "bfloat16", device=device)
    critic = LoadedCritic(critic_model.eval(), ref.eval(), tok, {"normalize": "turn", "use_privileged_info": True})
    if args.critic_scaling:
        load_mid = os.getloadavg()
        turns = turns[: args.turns]  # the first N agent turns (records are kept whole above)
        rows = critic_scaling(critic, tok, turns, records, args.num_candidates, args.candidate_tokens,
                              args.prompt_tokens, args.repeats)
        load_after = os.getloadavg()
        print(f"[bench] critic scoring, {len(turns)} turns, prompts of ~{rows[0]['prompt_tokens']:.0f} tokens, "
              f"candidates of ~{rows[0]['candidate_tokens']:.0f} tokens, critic + reference ({Path(path).name}), "
              f"bf16 on {device}, {args.repeats} timed repeats after a warm-up")
        print(f"\n| scoring | 1 candidate s/turn | {args.num_candidates} candidates s/turn | ratio |")
        print("|---|---|---|---|")
        for r in rows:
            print(f"| {r['mode']} | {r['one']:.4f} | {r['many']:.4f} | {r['ratio']:.2f}x |")
        shared = rows[0]
        print(f"\n{args.num_candidates} candidates cost {shared['ratio']:.2f}x one with the prompt computed once "
              f"(target <= 3x: {'MET' if shared['ratio'] <= 3 else 'NOT MET'}); whole sequences: {rows[1]['ratio']:.2f}x")
        print(f"arithmetic floor at these lengths (tokens run for {args.num_candidates} against 1, prompt once): "
              f"{shared['floor']:.2f}x; measured / floor {shared['ratio_to_floor']:.2f}"
              + (" (no sharing scorer can meet <= 3x here: the candidates are too long for the prompt)"
                 if shared["floor"] > 3 else "")
              + ("; below the floor, the one-candidate time was inflated (load, or too few --repeats): not a "
                 "measurement to cite" if shared["ratio_to_floor"] < 0.9 else ""))
        print(f"load average after: {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f} "
              f"(before: {load_before[0]:.2f}; after loading: {load_mid[0]:.2f})")
        out = {"critic_scaling": rows, "num_candidates": args.num_candidates, "candidate_tokens": args.candidate_tokens,
               "turns": len(turns), "device": str(device), "load_before": load_before, "load_after": load_after}
        print(json.dumps(out))
        if args.json_out:
            Path(args.json_out).write_text(json.dumps(out, indent=1))
        return 0
    policy, _ = load_model(path, "bfloat16", device=device)
    lens = [len(tok.apply_chat_template(t[2], tokenize=False, add_generation_prompt=True)) for t in turns]
    print(f"[bench] {len(records)} records, {len(turns)} agent turns (prompts of {min(lens)}-{max(lens)} characters), "
          f"{args.num_candidates} candidates of up to {args.max_new_tokens} tokens per turn, temperature 1.0; "
          "model Qwen2.5-Coder-0.5B-Instruct (local: bf16 checkpoint; server: its GGUF)")
    local_name = "local transformers"
    totals: dict[str, dict] = {}
    servers: list[ServerProcess] = []
    if not args.base_url and args.server != "none":
        gguf = gguf_path()
        if args.server in ("batched", "both"):
            servers.append(ServerProcess.batched(gguf, args.server_threads, tmp / "batched.log", extra_bufts=args.extra_bufts))
        if args.server in ("llama_cpp", "both"):
            servers.append(ServerProcess.llama_cpp(gguf, args.server_threads, args.extra_bufts, tmp / "llama_cpp.log"))
    with contextlib.ExitStack() as stack:
        endpoints = []  # (name, policy)
        if args.base_url:
            endpoints.append((f"server ({args.base_url})", lambda: OpenAIPolicy(
                args.model_name, base_url=args.base_url, api_key="EMPTY", timeout=600, concurrency=args.num_candidates)))
        for srv in servers:
            stack.enter_context(srv)
            endpoints.append((srv.name, lambda srv=srv: OpenAIPolicy(
                "qwen2.5-coder-0.5b-instruct", base_url=srv.base_url, api_key="EMPTY", timeout=600,
                concurrency=args.num_candidates)))
        # record by record, every path in turn: a change of machine load mid-run hits them alike
        for i, rec in enumerate(records):
            print(f"[bench] record {i + 1}/{len(records)} (load {os.getloadavg()[0]:.2f}) ...", flush=True)
            if not args.skip_local:
                _add(totals, run_stage(local_name, [rec], policy, tok, critic, cfg))
            for name, make in endpoints:
                _add(totals, run_stage(name, [rec], policy, tok, critic, cfg, make(), args.turns_in_flight))
    results = list(totals.values())
    load_after = os.getloadavg()
    print()
    print("| path | turns | candidates | tokens | stage s | candidates/s | tokens/s | sampling candidates/s | "
          "sampling tokens/s | critic s/turn | distinct/turn | cut | failed turns |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        print(f"| {r['name']} | {r['turns']} | {r['candidates']} | {r['tokens']} | {r['wall']:.1f} | "
              f"{r['candidates'] / r['wall']:.3f} | {r['tokens'] / r['wall']:.2f} | {r['candidates'] / r['sampling']:.3f} | "
              f"{r['tokens'] / r['sampling']:.2f} | {r['critic_per_turn']:.2f} | "
              f"{'-' if r['distinct'] is None else format(r['distinct'], '.1f')} | "
              f"{r['cut']} | {r['failed']} |")
    local = next((r for r in results if r["name"] == local_name), None)
    if local is not None:
        for r in results:
            if r is local:
                continue
            ratio = (r["candidates"] / r["wall"]) / (local["candidates"] / local["wall"])
            sratio = (r["candidates"] / r["sampling"]) / (local["candidates"] / local["sampling"])
            print(f"\n{r['name']} / local, candidates per second: {sratio:.1f}x for sampling, {ratio:.1f}x for the "
                  f"whole stage with the critic (target >= 3x for sampling: {'MET' if sratio >= 3 else 'NOT MET'})")
    print(f"load average after: {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f} "
          f"(before: {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f})")
    out = {"results": results, "device": str(device), "load_before": load_before, "load_after": load_after}
    print(json.dumps(out))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

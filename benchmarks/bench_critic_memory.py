"""Peak memory of one critic training step on long rows: the LM head in one piece against in
pieces (``sweet_agent.sweet_rl.logprobs.token_logprobs``), with and without activation
checkpointing, measured side by side in one run.

Each configuration runs in a fresh subprocess (peak resident memory, ``ru_maxrss``, is per
process): a LoRA critic (r 8, all linear layers, as ``--config cpu``) scores ``--rows`` rows of
``--length`` tokens with ``--scored`` scored positions each, the reference pass runs with the
adapters off, and the step's backward pass runs. Printed: peak memory after the policy's
forward, the reference's forward and the backward pass, and each configuration's ratio to
"one piece" with the same checkpointing. What it answers: the learning benchmark's frontend
critic (4 rows of 1,536 HTML tokens) was killed by the OOM killer on a 23 GB machine.

Uses the default model's weights when they are on this machine, else a model with its shapes and
random weights (memory does not depend on the values). ``--layers N`` keeps the first N layers
(the head's share grows as depth shrinks).

Run: ``python benchmarks/bench_critic_memory.py`` (``--help`` for sizes). The default sizes need
about 25 GB for the configuration without checkpointing: ``--no-plain`` leaves it out.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
ROOT = Path(__file__).resolve().parents[1]


def _peak_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6  # kB on Linux


def measure(chunk: int, checkpointing: bool, rows: int, length: int, scored: int, layers: int | None) -> dict:
    """One configuration, in this process (run by :func:`main` in a subprocess each)."""
    sys.path.insert(0, str(ROOT))
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoConfig, AutoModelForCausalLM

    from sweet_agent.policies.default_model import default_model_status, resolve_model_path
    from sweet_agent.sweet_rl.algorithm import reference_of
    from sweet_agent.sweet_rl.logprobs import token_logprobs

    torch.manual_seed(0)
    weights = "random weights"
    path = resolve_model_path("default", quiet=True) if default_model_status().get("ready") else None
    if path is not None and layers is None:
        model, weights = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32), "default model"
    else:
        from transformers import Qwen2Config

        cfg = AutoConfig.from_pretrained(path) if path is not None else Qwen2Config(
            vocab_size=151936, hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
            num_attention_heads=14, num_key_value_heads=2, tie_word_embeddings=True)  # Qwen2.5-0.5B's shapes
        if layers is not None:
            cfg.num_hidden_layers = layers
        model = AutoModelForCausalLM.from_config(cfg, dtype=torch.float32)
    model.config.use_cache = False
    model = get_peft_model(model, LoraConfig(r=8, lora_alpha=16, target_modules="all-linear", lora_dropout=0.0))
    if checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        model.enable_input_require_grads()
    model.train()
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(0, model.config.vocab_size, (rows, length), generator=g)
    attn = torch.ones_like(ids)
    mask = torch.zeros_like(ids, dtype=torch.bool)
    mask[:, length - scored:] = True
    out = {"weights": weights, "layers": model.config.num_hidden_layers, "after_load_gb": _peak_gb()}
    policy = token_logprobs(model, ids, attn, mask, chunk_size=chunk)
    out["policy_forward_gb"] = _peak_gb()
    with torch.no_grad(), reference_of(model, None) as ref:
        reference = token_logprobs(ref, ids, attn, mask, chunk_size=chunk)
    out["reference_forward_gb"] = _peak_gb()
    (policy - reference).sum().backward()
    out["step_gb"] = _peak_gb()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=4, help="rows per step (a batch of 2 pairs: 4)")
    ap.add_argument("--length", type=int, default=1536, help="tokens per row (the frontend arm's max_length)")
    ap.add_argument("--scored", type=int, default=1036, help="scored (agent) positions per row")
    ap.add_argument("--chunk", type=int, default=128, help="scored positions per piece of the LM head")
    ap.add_argument("--layers", type=int, default=None, help="keep the first N layers (random weights)")
    ap.add_argument("--no-plain", action="store_true", help="leave out the runs without activation checkpointing")
    ap.add_argument("--measure", default=None, help=argparse.SUPPRESS)  # one configuration (subprocess)
    args = ap.parse_args(argv)
    if args.measure:
        chunk, ckpt = json.loads(args.measure)
        print(json.dumps(measure(chunk, ckpt, args.rows, args.length, args.scored, args.layers)))
        return 0
    configs = [(c, True) for c in (0, args.chunk)] + ([] if args.no_plain else [(c, False) for c in (0, args.chunk)])
    print(f"{args.rows} rows x {args.length} tokens, {args.scored} scored; LoRA r 8; load {os.getloadavg()[0]:.1f}")
    results = {}
    for chunk, ckpt in configs:
        cmd = [sys.executable, __file__, "--measure", json.dumps([chunk, ckpt]), "--rows", str(args.rows),
               "--length", str(args.length), "--scored", str(args.scored)]
        cmd += ["--layers", str(args.layers)] if args.layers is not None else []
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        label = f"{'pieces of ' + str(chunk) if chunk else 'one piece'}, {'checkpointing' if ckpt else 'no checkpointing'}"
        if proc.returncode != 0:
            killed = proc.returncode in (-9, 137)
            print(f"{label}: {'killed (out of memory?)' if killed else 'failed'}: {proc.stderr.strip()[-300:]}")
            continue
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        results[(chunk, ckpt)] = r
        base = results.get((0, ckpt))
        ratio = f"  ({r['step_gb'] / base['step_gb']:.2f}x one piece)" if base and chunk else ""
        print(f"{label} [{r['weights']}, {r['layers']} layers]: policy forward {r['policy_forward_gb']:.2f} GB, "
              f"reference {r['reference_forward_gb']:.2f} GB, step {r['step_gb']:.2f} GB peak{ratio}")
    print(f"load after: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

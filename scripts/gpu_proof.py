"""GPU proof (issue 40): SWEET-RL's stages measured on an accelerator, in one prepared device run.

The device machine has torch, transformers, peft and accelerate but no model weights and no
network, so the models are random-weight models of real shapes built from configs: the
Qwen2.5-0.5B shape (the config and tokenizer of the default model, carried in
``.gpu_assets/qwen2.5-0.5b``) and the Llama-3.1-8B shape (with the Qwen tokenizer's vocabulary).
Every stage runs in its own subprocess under its own timeout, so a stage that hangs or dies costs
only itself, and the whole run keeps to ``--budget`` seconds (a stage that no longer fits is
recorded as skipped). Stages, most wanted first:

- ``critic-scaling-0.5b`` / ``critic-scaling-8b``: the critic and its reference scoring 1 and 16
  candidates per turn (~1,500-token prompts, 256-token candidates), the prompt computed once
  (``share_prefix``) against whole sequences (``benchmarks/bench_step_pairs.py --critic-scaling``;
  for 8B the same function in-process, critic and reference one model read twice);
- ``train-critic``, ``train-actor`` (16 candidates per turn sampled and scored on the device, then
  one DPO step), ``train-rft``: one optimizer step each at the ``paper`` preset on the 0.5B shape
  (full fine-tuning, bf16, activation checkpointing);
- ``step-pairs``: ``benchmarks/bench_step_pairs.py`` on the local path (HF ``generate``, 16
  candidates per turn, then the critic);
- ``gpu-smoke``: ``scripts/gpu_smoke.py`` (every command with a tiny model, each checked to have
  used the device);
- ``sweet-actor-v2``: one of protocol v2's SWEET-RL actor trainings as the learning benchmark runs
  it (``train-actor --config cpu``: LoRA, bf16 mixed precision, activation checkpointing, 1 epoch,
  NLL 0.01) on that run's own 260 step pairs (carried as ``.gpu_assets/v2-pairs-s0.jsonl``; absent,
  the ``train-actor`` stage's pairs, always so in ``--dry-run``) with the 0.5B shape: what the ~2.8 h it takes on the 2-core
  CPU costs on the accelerator.

Each training stage records the devices of every model it loaded and its peak CUDA memory. All
figures go to one JSON (``--out``/gpu_proof.json, rewritten atomically after each stage) and a
summary table is printed. ``--dry-run`` runs every stage on the CPU with tiny shapes and short
lengths in a few minutes (the test suite's form: tests/training/test_gpu_proof.py).

Run on the device machine: ``bash scripts/gpu_proof.sh`` (installs the carried wheels first).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests" / "training"))

from colbench_gym.jsonl import write_text_atomic  # noqa: E402 - after the sys.path set-up above

ASSETS = ROOT / ".gpu_assets" / "qwen2.5-0.5b"
RECORDS = ROOT / "tests" / "agent" / "fixtures" / "paper_offline_sample.jsonl"
#: protocol v2's step pairs of critic s0 (benchmarks' learning-v2 run, pairs/s0.jsonl), when carried
V2_PAIRS = ASSETS.parent / "v2-pairs-s0.jsonl"
#: (stage, timeout in seconds on the device, timeout in the dry run)
STAGES = [("critic-scaling-0.5b", 120, 240), ("critic-scaling-8b", 150, 240), ("train-critic", 150, 240),
          ("train-actor", 200, 300), ("train-rft", 120, 240), ("step-pairs", 150, 240), ("gpu-smoke", 300, 300),
          ("sweet-actor-v2", 240, 240)]
#: the Llama-3.1-8B shape (vocabulary: the Qwen tokenizer's)
LLAMA_8B = dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
                num_key_value_heads=8, max_position_embeddings=131072, rms_norm_eps=1e-5, tie_word_embeddings=False,
                rope_parameters={"rope_type": "default", "rope_theta": 500000.0})
TINY = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2)


def tokenizer_dir(work: Path) -> Path:
    """The real Qwen2.5 tokenizer when carried (.gpu_assets), else the suite's tiny one."""
    if (ASSETS / "tokenizer.json").is_file():
        return ASSETS
    from tiny_model import build_tiny_tokenizer

    out = work / "tiny-tokenizer"
    build_tiny_tokenizer().save_pretrained(out)
    return out


def build_model(kind: str, work: Path, dry: bool, device=None):
    """A random-weight model of ``kind`` ("qwen-0.5b" or "llama-8b"), bf16; in a dry run the same
    architecture with tiny widths. Returns ``(model, tokenizer)``."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer, LlamaConfig

    tok = AutoTokenizer.from_pretrained(tokenizer_dir(work))
    vocab = max(len(tok), 151936 if (ASSETS / "tokenizer.json").is_file() else len(tok))
    if kind == "qwen-0.5b":
        cfg = AutoConfig.from_pretrained(ASSETS) if (ASSETS / "config.json").is_file() else AutoConfig.for_model(
            "qwen2", hidden_size=896, intermediate_size=4864, num_hidden_layers=24, num_attention_heads=14,
            num_key_value_heads=2)
        cfg.tie_word_embeddings = True  # as Qwen2.5-0.5B ships
    else:
        cfg = LlamaConfig(**LLAMA_8B)
    cfg.vocab_size = vocab
    cfg.pad_token_id = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    cfg.eos_token_id = tok.eos_token_id
    if dry:
        for k, v in TINY.items():
            setattr(cfg, k, v)
        if hasattr(cfg, "layer_types"):
            cfg.layer_types = cfg.layer_types[: cfg.num_hidden_layers]
    torch.manual_seed(0)
    with torch.device(device or "cpu"):
        model = AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16)
    return model.eval(), tok


def model_dir(work: Path, dry: bool) -> Path:
    """The 0.5B-shape model saved once (the training commands load it by path)."""
    out = work / "qwen-0.5b"
    if not (out / "config.json").is_file():
        model, tok = build_model("qwen-0.5b", work, dry)
        model.save_pretrained(out)
        tok.save_pretrained(out)
    return out


def training_data(work: Path) -> Path:
    from gpu_smoke import toy_records

    out = work / "data.jsonl"
    out.write_text("".join(json.dumps(r) + "\n" for r in toy_records()))
    return out


def _trainer_flags(dry: bool) -> list[str]:
    flags = ["--report_to", "none", "--save_strategy", "no", "--max_steps", "1", "--logging_steps", "1"]
    return flags + (["--use_cpu", "true", "--bf16", "false", "--max_length", "512"] if dry else [])


def _recorded(argv: list[str], cuda: bool) -> dict:
    """Run ``sweet-agent argv`` in this process; the devices of every model it loaded, its peak
    CUDA memory and its seconds."""
    import torch
    from gpu_smoke import LoadedModels

    from sweet_agent.cli import main as sweet_agent

    if cuda:
        torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    with LoadedModels() as loaded:
        status = sweet_agent(argv)
    return {"status": status, "seconds": time.perf_counter() - t0, "models": len(loaded.models),
            "model_devices": sorted({p.device.type for m in loaded.models for p in m.parameters()}),
            "peak_gib": (torch.cuda.max_memory_allocated() / 2**30) if cuda else 0.0}


def run_stage(name: str, work: Path, dry: bool) -> dict:
    """One stage in this (child) process; returns its figures."""
    import torch

    cuda = torch.cuda.is_available() and not dry
    device = "cuda" if cuda else "cpu"
    py = sys.executable
    if name.startswith("critic-scaling"):
        # the dry run proves the stage runs and reports both modes: the fewest candidates, tokens, turns
        n, cand, prompt = (16, 256, 1500) if not dry else (2, 8, 64)
        turns_n = 2 if not dry else 1
        if name.endswith("0.5b"):
            out = work / f"{name}.json"
            cmd = [py, str(ROOT / "benchmarks" / "bench_step_pairs.py"), "--critic-scaling", "--model",
                   str(model_dir(work, dry)), "--records", str(RECORDS), "--turns", str(turns_n), "--num-candidates", str(n),
                   "--candidate-tokens", str(cand), "--prompt-tokens", str(prompt), "--repeats", "3" if cuda else "1",
                   "--device", device, "--json-out", str(out)]
            subprocess.run(cmd, check=True)
            res = json.loads(out.read_text())
            return {"device": res["device"], "rows": res["critic_scaling"], "num_candidates": n,
                    "candidate_tokens": cand, "model": "Qwen2.5-0.5B shape, random weights, bf16"}
        from bench_step_pairs import critic_scaling

        from sweet_agent.actor.candidates import stage_turns
        from sweet_agent.actor.config import StepPairConfig
        from sweet_agent.critic.loading import LoadedCritic
        from sweet_agent.training_data.records import load_records

        if cuda:
            torch.cuda.reset_peak_memory_stats()
        t0 = time.perf_counter()
        model, tok = build_model("llama-8b", work, dry, device)
        built = time.perf_counter() - t0
        records = load_records(RECORDS)
        turns = stage_turns(records, StepPairConfig(num_candidates=2))[:turns_n]
        critic = LoadedCritic(model, model, tok, {"normalize": "turn", "use_privileged_info": True})
        rows = critic_scaling(critic, tok, turns, records, n, cand, prompt, 3 if cuda else 1)
        params = sum(p.numel() for p in model.parameters())
        return {"device": str(next(model.parameters()).device), "rows": rows, "num_candidates": n,
                "candidate_tokens": cand, "build_seconds": built, "parameters": params,
                "peak_gib": torch.cuda.max_memory_allocated() / 2**30 if cuda else 0.0,
                "model": "Llama-3.1-8B shape (Qwen vocabulary), random weights, bf16; critic and reference one model "
                         "read twice"}
    if name.startswith("train-"):
        model, data = model_dir(work, dry), training_data(work)
        common = ["--config", "paper", "--model_name_or_path", str(model), "--data", str(data), *_trainer_flags(dry)]
        if name == "train-critic":
            argv = ["train-critic", *common, "--output_dir", str(work / "critic")]
        elif name == "train-rft":
            argv = ["train-rft", *common, "--output_dir", str(work / "rft")]
        else:
            if not (work / "critic" / "config.json").is_file() and not any((work / "critic").glob("adapter_config.json")):
                raise SystemExit("train-actor needs the critic of the train-critic stage")
            argv = ["train-actor", *common, "--critic", str(work / "critic"), "--output_dir", str(work / "actor"),
                    "--num_candidates", "16" if not dry else "4", "--max_new_tokens", "256" if not dry else "8",
                    "--first_turns", "1", "--turn_fraction", "0.25", "--device", device,
                    "--pairs_out", str(work / "pairs.jsonl")]
        res = _recorded(argv, cuda)
        if res["status"] != 0:
            raise SystemExit(f"{name} exited {res['status']}")
        res["device"] = ",".join(res["model_devices"]) or "-"
        if name == "train-actor":
            meta = work / "pairs.jsonl.meta.json"
            pf = work / "pairs.jsonl"
            res["pairs"] = len(pf.read_text(encoding="utf-8").splitlines()) if pf.is_file() else 0
            if meta.is_file():
                res["pair_timings"] = json.loads(meta.read_text()).get("timings")
        return res
    if name == "step-pairs":
        out = work / "step-pairs.json"
        n, tokens, turns_n = (16, 256, 2) if not dry else (2, 8, 1)
        cmd = [py, str(ROOT / "benchmarks" / "bench_step_pairs.py"), "--server", "none", "--model",
               str(model_dir(work, dry)), "--records", str(RECORDS), "--turns", str(turns_n), "--num-candidates", str(n),
               "--max-new-tokens", str(tokens), "--device", device, "--json-out", str(out)]
        subprocess.run(cmd, check=True)
        res = json.loads(out.read_text())
        r = res["results"][0]
        return {"device": res["device"], "turns": r["turns"], "candidates": r["candidates"], "tokens": r["tokens"],
                "sampling_tokens_per_s": r["tokens"] / r["sampling"], "critic_s_per_turn": r["critic_per_turn"],
                "stage_seconds": r["wall"], "num_candidates": n, "max_new_tokens": tokens}
    if name == "gpu-smoke":
        cmd = [py, str(ROOT / "scripts" / "gpu_smoke.py"), "--device", device, "--workdir", str(work / "smoke")]
        if dry:
            cmd += ["--only", "train-critic"]  # both critic stages: no other stage needed first
        proc = subprocess.run(cmd, capture_output=True, text=True)
        sys.stdout.write(proc.stdout[-6000:])
        sys.stderr.write(proc.stderr[-3000:])
        rows = []
        for line in proc.stdout.splitlines():
            m = re.match(r"gpu-smoke: (.+?): (OK|FAILED[^(]*) \((\d+) models on ([^,]+), peak ([\d.]+) MiB, ([\d.]+) s\)$",
                         line)
            if m:
                rows.append({"stage": m[1], "ok": m[2] == "OK", "models": int(m[3]), "device": m[4],
                             "peak_mib": float(m[5]), "seconds": float(m[6])})
        if proc.returncode != 0:
            raise SystemExit(f"gpu_smoke.py exited {proc.returncode}")
        return {"device": device, "stages": rows, "all_ok": bool(rows) and all(r["ok"] for r in rows)}
    if name == "sweet-actor-v2":
        # the argv of benchmarks/bench_learning.py's train-sweet stage, less its checkpointing
        pairs = V2_PAIRS if V2_PAIRS.is_file() and not dry else work / "pairs.jsonl"  # the dry run: always the latter
        if not pairs.is_file():
            raise SystemExit(f"sweet-actor-v2 needs {V2_PAIRS} (carried) or the train-actor stage's pairs")
        argv = ["train-actor", "--config", "cpu", "--model_name_or_path", str(model_dir(work, dry)), "--output_dir",
                str(work / "sweet-v2"), "--num_train_epochs", "1.0", "--max_steps", "2" if dry else "-1",
                "--max_length", "512" if dry else "1536", "--gradient_checkpointing", "true", "--save_strategy", "no",
                "--report_to", "none", "--seed", "0", "--merge_adapter", "false", "--pairs_in", str(pairs),
                "--learning_rate", "0.00025", "--loss_weights", "1.0", "0.01", "--logging_steps", "10",
                *(["--bf16", "true"] if cuda else ["--use_cpu", "true", "--bf16", "false"])]
        res = _recorded(argv, cuda)
        if res["status"] != 0:
            raise SystemExit(f"{name} exited {res['status']}")
        budget = json.loads((work / "sweet-v2" / "training_budget.json").read_text())
        res.update(device=",".join(res["model_devices"]) or "-", pairs_file=pairs.name,
                   pairs=len(pairs.read_text(encoding="utf-8").splitlines()), optimizer_steps=budget["optimizer_steps"],
                   samples_seen=budget["samples_seen"], epochs=budget["epochs"], precision=budget["precision"])
        return res
    raise SystemExit(f"unknown stage {name!r}")


def _run_group(cmd: list[str], timeout: float, log: Path) -> tuple[int | str, str]:
    """``cmd`` in its own process group, output to ``log``; at ``timeout`` the whole group (the
    stage and whatever it started) is killed. Returns ``(returncode or "timeout", output)``."""
    import signal

    with log.open("w") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            rc: int | str = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            rc = "timeout"
    return rc, log.read_text(errors="replace")


def _write(path: Path, data: dict) -> None:
    write_text_atomic(path, json.dumps(data, indent=1, default=str))


def environment() -> dict:
    import torch

    info = {"python": sys.version.split()[0], "torch": torch.__version__, "cuda": torch.cuda.is_available()}
    if info["cuda"]:
        info["gpu"] = torch.cuda.get_device_name(0)
        info["gpu_memory_gib"] = torch.cuda.get_device_properties(0).total_memory / 2**30
    for pkg in ("transformers", "trl", "peft", "accelerate", "datasets", "gymnasium"):
        try:
            info[pkg] = __import__(pkg).__version__
        except Exception as exc:  # noqa: BLE001 - recorded, the stages that need it then fail on their own
            info[pkg] = f"unavailable: {type(exc).__name__}: {exc}"[:200]
    return info


def summary(result: dict) -> str:
    lines = ["| stage | status | device | seconds | figures |", "|---|---|---|---|---|"]
    for name, st in result["stages"].items():
        r = st.get("result") or {}
        figs = ""
        if "rows" in r:
            figs = "; ".join(f"{x['mode']}: 1 cand {x['one']:.3f} s, {r['num_candidates']} cand {x['many']:.3f} s "
                             f"({x['ratio']:.2f}x)" for x in r["rows"])
        elif "peak_gib" in r and name.startswith("train-"):
            figs = f"{r['models']} models on {r['device']}, peak {r['peak_gib']:.1f} GiB"
        elif "optimizer_steps" in r:
            figs = (f"{r['pairs']} pairs of {r['pairs_file']}, {r['optimizer_steps']} steps ({r['epochs']:g} epoch, "
                    f"{r['precision']}), peak {r['peak_gib']:.1f} GiB, train_runtime {st.get('train_runtime_s', 0):.1f} s")
        elif "sampling_tokens_per_s" in r:
            figs = (f"{r['candidates']} candidates, {r['sampling_tokens_per_s']:.0f} sampled tokens/s, critic "
                    f"{r['critic_s_per_turn']:.2f} s/turn")
        elif "stages" in r:
            figs = f"{sum(x['ok'] for x in r['stages'])}/{len(r['stages'])} smoke stages OK"
        lines.append(f"| {name} | {st['status']} | {r.get('device', '-')} | {st.get('seconds', 0):.1f} | {figs} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dry-run", action="store_true", help="every stage on the CPU with tiny shapes (minutes)")
    ap.add_argument("--out", default=os.environ.get("OUT") or "gpu_proof_out", help="folder of gpu_proof.json")
    ap.add_argument("--work", help="working folder (models, outputs; default: a temporary one)")
    ap.add_argument("--budget", type=float, default=520.0, help="seconds for all stages together")
    ap.add_argument("--only", nargs="*", help="run only these stages")
    ap.add_argument("--stage", help=argparse.SUPPRESS)  # internal: run one stage in this process
    args = ap.parse_args(argv)
    work = Path(args.work or tempfile.mkdtemp(prefix="gpu_proof."))
    work.mkdir(parents=True, exist_ok=True)
    if args.stage:
        res = run_stage(args.stage, work, args.dry_run)
        _write(work / f"{args.stage}.result.json", res)
        return 0
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t_start = time.perf_counter()
    result = {"dry_run": args.dry_run, "environment": environment(), "stages": {}}
    print(f"gpu-proof: {json.dumps(result['environment'])}", flush=True)
    if not result["environment"]["cuda"] and not args.dry_run:
        print("gpu-proof: no CUDA GPU here; run it on the device machine, or --dry-run for the CPU form")
        return 0
    log = (out / "gpu_proof.log").open("w")
    for name, limit, dry_limit in STAGES:
        if args.only and name not in args.only:
            continue
        left = args.budget - (time.perf_counter() - t_start)
        limit = dry_limit if args.dry_run else limit
        if left < 30:
            result["stages"][name] = {"status": "skipped (budget)", "seconds": 0.0}
            _write(out / "gpu_proof.json", result)
            continue
        cmd = [sys.executable, __file__, "--stage", name, "--work", str(work)] + (["--dry-run"] if args.dry_run else [])
        print(f"gpu-proof: {name} (timeout {min(limit, left):.0f} s) ...", flush=True)
        t0 = time.perf_counter()
        rc, text = _run_group(cmd, min(limit, left), work / f"{name}.out")
        seconds = time.perf_counter() - t0
        log.write(f"===== {name} (rc {rc}, {seconds:.1f} s)\n{text}\n")
        log.flush()
        entry = {"status": "ok" if rc == 0 else f"failed ({rc})", "seconds": seconds}
        res_file = work / f"{name}.result.json"
        if rc == 0 and res_file.is_file():
            entry["result"] = json.loads(res_file.read_text())
        runtime = re.findall(r"'train_runtime': '?([\d.]+)", text)
        if runtime:
            entry["train_runtime_s"] = float(runtime[-1])
        if rc != 0:
            entry["tail"] = text[-1500:]
        result["stages"][name] = entry
        _write(out / "gpu_proof.json", result)
        print(f"gpu-proof: {name}: {entry['status']} in {seconds:.1f} s", flush=True)
    log.close()
    result["seconds"] = time.perf_counter() - t_start
    _write(out / "gpu_proof.json", result)
    print("\n" + summary(result))
    failed = [n for n, st in result["stages"].items() if st["status"] != "ok"]
    print(f"gpu-proof: {len(result['stages']) - len(failed)} of {len(result['stages'])} stages ok"
          + (f"; not ok: {', '.join(failed)}" if failed else "") + f"; {result['seconds']:.0f} s; {out / 'gpu_proof.json'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

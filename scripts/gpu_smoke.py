"""Every training and evaluation command on the accelerator, with a tiny random model, each one
checked to have really used it (issue 23).

Stages (each the real ``sweet-agent`` command, run in this process): ``train-critic`` (with and
without privileged information), ``train-actor`` (step pairs built on the device, then DPO),
``train-actor --pairs_in``, ``train-rft``, ``train-mtdpo``, ``train-grpo`` (with and without the
critic reward), ``rollout``, ``rollout --best-of 2 --critic``, ``evaluate --best-of 2 --critic``,
``view --critic``, and issue 36's: ``mc-values`` (the model samples candidates and plays their
completions), ``critic-report`` (the critic, without and with the release's step score) and
``train-actor --pair_labels monte-carlo`` (the oracle-credit actor). The last two read a values
file made beforehand by a scripted policy (tests/training/mc_fixtures.py), so their pairs have
known, unequal values (a tiny random model's completions all grade 0). After each, every model the stage loaded must have all its parameters on
the device, and on CUDA ``torch.cuda.max_memory_allocated()`` (reset before the stage) must be
> 0. A table of stages, devices, peak memory and seconds is printed; any failed check exits 1.

``--device cuda`` (the default; ``scripts/gpu_smoke.sh``, ``make gpu-smoke``) on a machine
without a GPU says so and exits 0. ``--device cpu`` forces the CPU everywhere (``--use_cpu``
for the trainers, ``--device cpu`` / ``--critic_device cpu`` for the rest): the test suite's
counterpart (tests/training/test_gpu_smoke.py).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "training"))


def toy_records() -> list[dict]:
    """4 tasks x (an asking success, a rambling failure, a half-right answer)."""
    recs = []
    for i in range(4):
        task = {"problem_description": f"Write a python function f{i}(x) for my shop.",
                "ground_truth": f"def f{i}(x):\n    return x + {i}\n",
                "test_cases": {"test1": f"f{i}(1)", "test2": f"f{i}(2)"}}
        for reward, a1, a2 in ((1.0, "What should it return?", f"I WANT TO ANSWER: def f{i}(x):\n    return x + {i}\n"),
                               (0.0, "no no no", "maybe maybe"), (0.5, "Is x a number?", "I WANT TO ANSWER: def f(x): 1")):
            hist = [{"role": "user", "content": task["problem_description"]}, {"role": "assistant", "content": a1},
                    {"role": "user", "content": "It adds a number."}, {"role": "assistant", "content": a2}]
            recs.append({"task": task, "dialogue_history": hist, "answer": a2, "reward": reward,
                         "success": reward >= 1.0})
    return recs


def tiny_model_dir(path: Path) -> Path:
    """The test suite's tiny random Qwen2 with Qwen2.5's chat template (TRL parses its tool calls)."""
    from tiny_model import build_tiny_model, build_tiny_tokenizer
    from trl.chat_template_utils import qwen2_5_chat_template

    tok = build_tiny_tokenizer()
    tok.chat_template = qwen2_5_chat_template
    build_tiny_model(tok).save_pretrained(path)
    tok.save_pretrained(path)
    return path


class LoadedModels:
    """Every model ``AutoModelForCausalLM.from_pretrained`` returns while installed (the policy,
    critic and reference of every command load through it)."""

    def __init__(self):
        self.models: list = []

    def __enter__(self) -> LoadedModels:
        from transformers import AutoModelForCausalLM

        self._orig = AutoModelForCausalLM.from_pretrained.__func__
        seen = self.models

        def recording(cls, *args, **kwargs):
            model = self._orig(cls, *args, **kwargs)
            seen.append(model)
            return model

        AutoModelForCausalLM.from_pretrained = classmethod(recording)
        return self

    def __exit__(self, *exc) -> None:
        from transformers import AutoModelForCausalLM

        AutoModelForCausalLM.from_pretrained = classmethod(self._orig)


def monte_carlo_inputs(work: Path) -> tuple[Path, Path]:
    """An offline trajectory played against the offline person (for ``mc-values``) and a values
    file whose candidates' values are known and unequal (for ``critic-report`` and the
    oracle-credit actor): the test suite's scripted behaviour policy, graded in the sandbox."""
    from mc_fixtures import FULL, HALF, QUESTION, ZERO, ScriptedPolicy, offline_record

    from sweet_agent.actor import mc_values as MC

    task = next(r["task"] for r in toy_records() if r["task"]["problem_description"].startswith("Write a python function f1("))
    record = offline_record(task, [QUESTION, FULL])  # the fixtures' answers are f1's
    trajectory, values = work / "mc-trajectory.jsonl", work / "values-scripted.jsonl"
    trajectory.write_text(json.dumps(record) + "\n")
    if not values.is_file():
        MC.build_mc_values([record], ScriptedPolicy([QUESTION, FULL, HALF, ZERO], turns=[FULL, FULL, FULL, ZERO]),
                           MC.MCConfig(num_candidates=4, rollouts_per_candidate=4, concurrency=4), output=values)
    return trajectory, values


def stages(work: Path, model: Path, data: Path, device: str) -> list[tuple[str, list[str]]]:
    cpu = device == "cpu"
    trainer = ["--report_to", "none", "--save_strategy", "no", "--max_steps", "1", "--per_device_train_batch_size",
               "2", "--logging_steps", "1"] + (["--use_cpu", "true"] if cpu else [])
    common = ["--model_name_or_path", str(model), "--max_length", "256", *trainer]
    critic, noref = work / "critic", work / "critic-noref"
    play = ["--policy", str(model), "--episodes", "1", "--max-turns", "2", "--max-new-tokens", "8", "--dtype", "float32",
            "--device", device, "--no-progress", "--tasks", "embedded:test"]
    grpo = ["--model_name_or_path", str(model), "--num_tasks", "1", "--num_generations", "2",
            "--max_completion_length", "8", "--max_tool_calling_iterations", "1", *trainer]
    return [
        ("train-critic", ["train-critic", "--data", str(data), "--output_dir", str(critic), *common]),
        ("train-critic (no privileged info)", ["train-critic", "--data", str(data), "--output_dir", str(noref),
                                               "--no_use_privileged_info", *common]),
        ("train-actor (step pairs + DPO)", ["train-actor", "--data", str(data), "--critic", str(critic),
                                            "--output_dir", str(work / "actor"), "--num_candidates", "2",
                                            "--max_new_tokens", "8", "--turn_fraction", "0.5", "--device", device,
                                            "--pairs_out", str(work / "pairs.jsonl"), *common]),
        ("train-actor --pairs_in", ["train-actor", "--pairs_in", str(work / "pairs.jsonl"),
                                    "--output_dir", str(work / "actor2"), *common]),
        ("train-rft", ["train-rft", "--data", str(data), "--output_dir", str(work / "rft"), *common]),
        ("train-mtdpo", ["train-mtdpo", "--data", str(data), "--output_dir", str(work / "mtdpo"), *common]),
        ("train-grpo", ["train-grpo", "--output_dir", str(work / "grpo"), *grpo]),
        ("train-grpo --critic", ["train-grpo", "--output_dir", str(work / "grpo-critic"), "--critic", str(critic),
                                 "--critic_device", device, *grpo]),
        ("rollout", ["rollout", "--output", str(work / "rollout.jsonl"), *play]),
        ("rollout --best-of 2", ["rollout", "--output", str(work / "bon.jsonl"), "--best-of", "2", "--critic",
                                 str(noref), *play]),
        ("evaluate --best-of 2", ["evaluate", "--output", str(work / "eval.jsonl"), "--best-of", "2", "--critic",
                                  str(noref), *play]),
        ("view --critic", ["view", str(work / "rollout.jsonl"), "--output", str(work / "site"), "--critic", str(critic),
                           "--device", device, "--no-tests"]),
        ("mc-values", ["mc-values", "--data", str(work / "mc-trajectory.jsonl"), "--output", str(work / "mc.jsonl"),
                       "--policy", str(model), "--device", device, "--dtype", "float32", "--num_candidates", "2",
                       "--rollouts_per_candidate", "1", "--max_new_tokens", "8", "--no_progress"]),
        ("critic-report", ["critic-report", "--values", str(work / "values-scripted.jsonl"), "--critic", str(critic),
                           "--release", f"release={critic}", "--tasks", "all", "--device", device, "--no-progress",
                           "--json", str(work / "critic-report.json")]),
        ("train-actor --pair_labels monte-carlo", ["train-actor", "--pair_labels", "monte-carlo", "--mc_values",
                                                   str(work / "values-scripted.jsonl"), "--output_dir",
                                                   str(work / "oracle"), *common]),
    ]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda", help="cuda (default) or cpu (the test suite's counterpart)")
    ap.add_argument("--workdir", help="keep the outputs here (default: a temporary folder)")
    ap.add_argument("--only", nargs="*", default=None, help="run only the stages whose names start with these")
    args = ap.parse_args(argv)
    import torch

    if args.device not in ("cuda", "cpu"):
        raise SystemExit("--device must be cuda or cpu")
    cuda = args.device == "cuda"
    if cuda and not torch.cuda.is_available():
        print("gpu-smoke: no CUDA GPU on this machine (torch.cuda.is_available() is False); nothing to check. "
              "Run it where a GPU is, or `python scripts/gpu_smoke.py --device cpu` for the CPU counterpart.")
        return 0
    from sweet_agent.cli import main as sweet_agent

    work = Path(args.workdir or tempfile.mkdtemp(prefix="gpu_smoke."))
    work.mkdir(parents=True, exist_ok=True)
    model = tiny_model_dir(work / "tiny")
    data = work / "data.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in toy_records()))
    chosen = [n for n, _ in stages(work, model, data, args.device)
              if args.only is None or any(n.startswith(o) for o in args.only)]
    if any(n.startswith(("mc-values", "critic-report", "train-actor --pair_labels")) for n in chosen):
        monte_carlo_inputs(work)  # sandbox-graded episodes: only when a stage reads them
    want = "cuda" if cuda else "cpu"
    print(f"gpu-smoke: device {want}"
          + (f" ({torch.cuda.get_device_name(0)}, {torch.cuda.device_count()} GPU(s))" if cuda else "")
          + f"; outputs in {work}", flush=True)
    rows, failed = [], []
    for name, argv_ in stages(work, model, data, args.device):
        if args.only is not None and not any(name.startswith(o) for o in args.only):
            continue
        if cuda:
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()
        t0 = time.perf_counter()
        with LoadedModels() as loaded:
            try:
                status = sweet_agent(argv_)
            except SystemExit as exc:  # a TrlParser usage error
                status = exc.code if isinstance(exc.code, int) else 1
        seconds = time.perf_counter() - t0
        devices = sorted({p.device.type for m in loaded.models for p in m.parameters()})
        peak = torch.cuda.max_memory_allocated() if cuda else 0
        problems = []
        if status != 0:
            problems.append(f"exit status {status}")
        if not loaded.models:
            problems.append("loaded no model")
        if devices and devices != [want]:
            problems.append(f"parameters on {', '.join(devices)}")
        if cuda and peak <= 0:
            problems.append("torch.cuda.max_memory_allocated() == 0")
        rows.append((name, len(loaded.models), ",".join(devices) or "-", peak, seconds, problems))
        if problems:
            failed.append(name)
        print(f"gpu-smoke: {name}: {'OK' if not problems else 'FAILED: ' + '; '.join(problems)} "
              f"({len(loaded.models)} models on {','.join(devices) or '-'}, peak {peak / 2**20:.1f} MiB, {seconds:.1f} s)",
              flush=True)
    print("\n| stage | models loaded | parameters on | peak CUDA memory (MiB) | seconds | check |")
    print("|---|---|---|---|---|---|")
    for name, n, dev, peak, seconds, problems in rows:
        print(f"| {name} | {n} | {dev} | {peak / 2**20:.1f} | {seconds:.1f} | {'OK' if not problems else '; '.join(problems)} |")
    if failed:
        print(f"gpu-smoke: {len(failed)} stage(s) failed: {', '.join(failed)}")
        return 1
    print(f"gpu-smoke: all {len(rows)} stages ran on {want}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The TRL path as TRL documents it (issue 26): a dataset row names its task, so the environment
factory cannot play another one; the GRPO snippet of README.md and docs/trl.md runs as written (tiny model
substituted); the example script runs; TRL's multi-turn loop is token-in/token-out around our
tools (the sampled tokens are kept as sampled, the person's replies are masked out of the loss)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from unittest.mock import patch

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from colbench_gym.online import ColBenchToolEnv, make_tool_env_factory  # noqa: E402
from colbench_gym.tasks.sources import resolve_task_source  # noqa: E402
from tests.training.tiny_model import build_tiny_model, build_tiny_tokenizer  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
FAST = dict(max_steps=1, per_device_train_batch_size=2, num_generations=2, max_completion_length=24,
            use_cpu=True, bf16=False, gradient_checkpointing=False, save_strategy="no", report_to="none",
            learning_rate=0.1)


def _qwen_tokenizer():
    from trl.chat_template_utils import qwen2_5_chat_template

    tok = build_tiny_tokenizer()
    tok.chat_template = qwen2_5_chat_template  # TRL parses Qwen2.5's tool calls
    return tok


@pytest.fixture(scope="module")
def tiny_qwen_dir(tmp_path_factory) -> str:
    tok = _qwen_tokenizer()
    path = tmp_path_factory.mktemp("tiny-qwen")
    build_tiny_model(tok).save_pretrained(path)
    tok.save_pretrained(path)
    return str(path)


# ------------------------------------------------------------------------ rows name their task
def test_a_row_plays_its_own_task_whatever_the_factory_was_made_with():
    from sweet_agent.grpo import build_prompt_dataset

    rows = build_prompt_dataset("backend", "collab:train", num_tasks=40)
    assert set(rows.column_names) == {"prompt", "kind", "tasks", "task_index", "seed"}
    collab = resolve_task_source("collab:train", "backend")
    env = make_tool_env_factory("ColBench-Backend-v0")()  # its own source: embedded:test (30 tasks)
    for i in (0, 29, 35):  # 0-29 used to play embedded:test's tasks, 35 raised IndexError
        assert env.reset(**rows[i]) == collab[i].problem_description
        assert env.info["task_id"] == collab[i].task_id
    same = make_tool_env_factory("ColBench-Backend-v0", tasks="collab:train")()
    assert same.reset(**rows[35]) == collab[35].problem_description and same.info["task_index"] == 35
    frontend = make_tool_env_factory("ColBench-Frontend-v0")
    with pytest.raises(ValueError, match="backend tasks was given to a frontend environment"):
        frontend().reset(**rows[0])


def test_rows_built_from_records_carry_the_records():
    from sweet_agent.grpo import build_prompt_dataset

    records = [resolve_task_source("embedded:train", "backend")[i].to_record() for i in (3, 7)]
    rows = build_prompt_dataset("backend", records)
    assert "task_index" not in rows.column_names and json.loads(rows[1]["task"]) == records[1]
    env = make_tool_env_factory("ColBench-Backend-v0")()
    assert env.reset(**rows[1]) == records[1]["problem_description"]


# ------------------------------------------------------------------------ the README snippet
def _grpo_snippet(doc: Path) -> str:
    blocks = re.findall(r"```python\n(.*?)```", doc.read_text(), re.S)
    [block] = [b for b in blocks if "GRPOTrainer(" in b]
    return block


@pytest.mark.parametrize("doc", ["README.md", "docs/trl.md"])
@patch.dict(os.environ, {"TRL_EXPERIMENTAL_SILENCE": "1"})
def test_the_readme_grpo_snippet_runs_as_written(doc, tiny_qwen_dir, tmp_path, monkeypatch):
    """The snippet's own config, bf16 choice included (TRL's default bf16 stops a CPU machine:
    issue 39), with a tiny model and a one-step, two-rollout size."""
    code = _grpo_snippet(ROOT / doc)
    model, config = 'resolve_model_path("Qwen/Qwen2.5-Coder-0.5B-Instruct")', "GRPOConfig(max_tool_calling_iterations=10,"
    assert model in code and config in code and code.rstrip().endswith("trainer.train()")
    # the name is the default model's: resolved offline (HF cache or the converted registry copy)
    from sweet_agent.policies.default_model import ALIASES

    assert "Qwen/Qwen2.5-Coder-0.5B-Instruct" in ALIASES
    toy = {k: v for k, v in FAST.items() if k not in ("bf16", "use_cpu")}  # the snippet's own device choice
    code = code.replace(model, repr(tiny_qwen_dir)).replace(
        config, f"GRPOConfig(max_tool_calling_iterations=10, output_dir={str(tmp_path / 'out')!r}, **TOY,")
    played = []
    reset = ColBenchToolEnv.reset

    def spy(self, **row):
        obs = reset(self, **row)
        played.append((row["task_index"], obs))
        return obs

    monkeypatch.setattr(ColBenchToolEnv, "reset", spy)
    scope = {"TOY": toy}
    exec(compile(code, doc, "exec"), scope)  # noqa: S102 - the document's own code
    trainer = scope["trainer"]
    assert trainer.state.global_step == 1 and any("reward" in log for log in trainer.state.log_history)
    assert trainer.args.bf16 is torch.cuda.is_available()
    collab = resolve_task_source("collab:train", "backend")
    assert played and all(obs == collab[i].problem_description for i, obs in played)  # collab:train, as the rows say


@patch.dict(os.environ, {"TRL_EXPERIMENTAL_SILENCE": "1"})
def test_the_example_script_runs(tiny_qwen_dir, tmp_path, capsys):
    from examples.trl_grpo import main

    trainer = main(["--model", tiny_qwen_dir, "--num-tasks", "2", "--max-steps", "1", "--num-generations", "2",
                    "--max-completion-length", "24", "--output-dir", str(tmp_path / "out"), "--temperature", "1.3"])
    assert trainer.state.global_step == 1 and "step 1: reward" in capsys.readouterr().out
    assert trainer.args.temperature == 1.3  # the flag reaches the sampling of TRL's rollouts (default 0.7)


@patch.dict(os.environ, {"TRL_EXPERIMENTAL_SILENCE": "1"})
def test_the_example_script_starts_from_a_lora_adapter(tiny_qwen_dir, tmp_path, capsys):
    """A SWEET-RL / RFT output saved as an adapter only (--merge_adapter false) is a --model: GRPO
    starts from the base with that adapter merged in, not from the bare base."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from examples.trl_grpo import main
    from sweet_agent.policies.checkpoints import load_causal_lm

    base = AutoModelForCausalLM.from_pretrained(tiny_qwen_dir, dtype=torch.float32)
    peft = get_peft_model(base, LoraConfig(r=2, target_modules="all-linear", init_lora_weights=False))
    peft.peft_config["default"].base_model_name_or_path = tiny_qwen_dir
    peft.save_pretrained(tmp_path / "adapter")
    trainer = main(["--model", str(tmp_path / "adapter"), "--num-tasks", "2", "--max-steps", "1",
                    "--num-generations", "2", "--max-completion-length", "24", "--output-dir", str(tmp_path / "out")])
    assert trainer.state.global_step == 1 and "step 1: reward" in capsys.readouterr().out
    assert trainer.args.temperature == 0.7  # the example's default, not TRL's 1.0

    def q_proj(model):
        return next(p for n, p in model.named_parameters() if "layers.0.self_attn.q_proj" in n and "lora" not in n)

    started = q_proj(trainer.model).detach()  # the frozen weight under GRPO's own LoRA
    assert torch.equal(started, q_proj(load_causal_lm(tmp_path / "adapter", dtype="float32")))
    assert not torch.equal(started, q_proj(AutoModelForCausalLM.from_pretrained(tiny_qwen_dir, dtype=torch.float32)))


# ------------------------------------------------------------------------ token-in / token-out
def _call(name: str, **arguments) -> str:
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call><|im_end|>"


def _char_ids(tok, text: str) -> list[int]:
    """``text`` as one token per piece the tokenizer would never produce itself (no merges): a
    sampled sequence that decoding and re-tokenizing would change (TRL #5224)."""
    ids = []
    for part in re.split(r"(<\|im_end\|>)", text):
        if part == "<|im_end|>":
            ids.append(tok.convert_tokens_to_ids(part))
        else:
            ids += [tok(ch, add_special_tokens=False)["input_ids"][0] for ch in part]
    return ids


@patch.dict(os.environ, {"TRL_EXPERIMENTAL_SILENCE": "1"})
def test_sampled_tokens_stay_as_sampled_and_tool_results_are_masked(tmp_path):
    from trl import GRPOConfig, GRPOTrainer

    from sweet_agent.grpo import build_prompt_dataset

    tok = _qwen_tokenizer()
    model = build_tiny_model(tok)
    rows = build_prompt_dataset("backend", "collab:train", num_tasks=1)
    question = _char_ids(tok, _call("ask_user", question="What is the limit?"))
    answer = _char_ids(tok, _call("submit_answer", code="def f():\n    return 1\n"))
    assert tok(tok.decode(question), add_special_tokens=False)["input_ids"] != question  # re-encoding would differ
    done = _char_ids(tok, "Done.<|im_end|>")
    script = iter([[question, question], [answer, answer], [done, done]])

    def generate(input_ids, **kwargs):
        new = next(script)
        return torch.cat([input_ids, torch.tensor(new, device=input_ids.device)], dim=-1)

    trainer = GRPOTrainer(model=model, processing_class=tok, train_dataset=rows,
                          args=GRPOConfig(output_dir=str(tmp_path / "out"), max_tool_calling_iterations=10,
                                          **{**FAST, "max_completion_length": 1024}),
                          environment_factory=make_tool_env_factory("ColBench-Backend-v0"))
    seen = {}
    inner = trainer._generate_and_score_completions

    def capture(inputs):
        seen.update(out := inner(inputs))
        return out

    with patch.object(trainer.model, "generate", side_effect=generate), \
            patch.object(trainer, "_generate_and_score_completions", side_effect=capture):
        trainer.train()
    ids = seen["completion_ids"][0].tolist()
    mask = seen["tool_mask"][0].tolist()
    n_q = len(question)
    assert ids[:n_q] == question and mask[:n_q] == [1] * n_q  # the first turn, token for token
    start = n_q
    while mask[start] == 0:  # the tool message (the person's reply) right after the call: no loss on it
        start += 1
    tool = ids[n_q:start]
    twin = make_tool_env_factory("ColBench-Backend-v0")()  # the same episode, played directly
    twin.reset(**rows[0])
    person = twin.ask_user("What is the limit?")
    assert person in tok.decode(tool)  # the tool message is the simulated person's reply
    assert ids[start:start + len(answer)] == answer and mask[start:start + len(answer)] == [1] * len(answer)


# ------------------------------------------------------------------------ the example's tool-call opener
def _sample_ids(model, tok, prefix_ids: list[int], bias: list, n: int, seed: int, processors=()) -> list[int]:
    """``n`` tokens sampled after ``prefix_ids`` under ``bias`` (and extra logits processors)."""
    from transformers import GenerationConfig, LogitsProcessorList

    torch.manual_seed(seed)
    config = GenerationConfig(max_new_tokens=n, do_sample=True, temperature=1.0, sequence_bias=bias or None,
                              pad_token_id=tok.pad_token_id, eos_token_id=None)
    out = model.generate(torch.tensor([prefix_ids]), attention_mask=torch.ones(1, len(prefix_ids), dtype=torch.long),
                         generation_config=config, logits_processor=LogitsProcessorList(list(processors)))
    return out[0, len(prefix_ids):].tolist()


def _sample(model, tok, prefix_ids: list[int], bias: list, n: int, seed: int) -> str:
    return tok.decode(_sample_ids(model, tok, prefix_ids, bias, n, seed))


def test_the_opener_makes_every_turn_a_call_of_a_tool_the_model_picks():
    """A random model given the example's bias: each sampled turn opens a call of ask_user or
    submit_answer with that tool's argument (which tool varies with the seed: the model picks),
    and a call whose JSON closed is closed with </tool_call>. Without the bias, no turn does."""
    from examples.trl_grpo import TOOL_CALL_OPENER, tool_call_opener_bias

    tok = _qwen_tokenizer()
    model = build_tiny_model(tok)
    bias = tool_call_opener_bias(tok)
    turn = tok.apply_chat_template([{"role": "user", "content": "hello"}], add_generation_prompt=True)
    turn = turn["input_ids"] if isinstance(turn, dict) or hasattr(turn, "keys") else turn
    starts = {f'{TOOL_CALL_OPENER}ask_user", "arguments": {{"question": "',
              f'{TOOL_CALL_OPENER}submit_answer", "arguments": {{"code": "'}
    picked = set()
    for seed in range(6):
        text = _sample(model, tok, list(turn), bias, 80, seed)
        assert any(text.startswith(s) for s in starts), text
        picked.add(text.split('"name": "')[1].split('"')[0])
    assert picked == {"ask_user", "submit_answer"}
    assert not any(_sample(model, tok, list(turn), [], 40, seed).startswith("<tool_call>") for seed in range(3))
    call = list(turn) + tok(f'{TOOL_CALL_OPENER}ask_user", "arguments": {{"question": "Which unit?',
                            add_special_tokens=False)["input_ids"] + tok('"}}', add_special_tokens=False)["input_ids"]
    assert _sample(model, tok, call, bias, 16, 0).startswith("\n</tool_call><|im_end|>")  # closed, and the turn ends


def test_the_opener_closes_a_call_only_the_way_the_parser_reads_it():
    """Every other token with "}}" in it (which closed 3 of 8 real calls wrongly: ``}},`` into a
    second call), a new turn's header inside the turn, and ending the turn before
    ``</tool_call>`` are never sampled under the bias; without it the random model samples them."""
    from examples.trl_grpo import tool_call_opener_bias

    tok = _qwen_tokenizer()
    model = build_tiny_model(tok)
    bias = tool_call_opener_bias(tok)
    banned = {t[0] for t, b in bias if len(t) == 1 and b < 0}
    stops = {tok.convert_tokens_to_ids("<|im_end|>"), tok.eos_token_id}
    assert tok.convert_tokens_to_ids("<|im_start|>") in banned and stops <= banned
    wrong_closes = {t for t in tok.get_vocab().values() if "}}" in tok.decode([t])} - {tok('"}}')["input_ids"][-1]}
    assert wrong_closes <= banned and tok('"}}')["input_ids"][-1] not in banned
    turn = tok.apply_chat_template([{"role": "user", "content": "hello"}], add_generation_prompt=True)
    turn = list(turn["input_ids"] if isinstance(turn, dict) or hasattr(turn, "keys") else turn)

    def prefer_banned(input_ids, scores):  # a model that likes the banned tokens (+8 on each)
        scores[:, sorted(banned)] += 8.0
        return scores

    def sampled(b, seed):
        return _sample_ids(model, tok, turn, b, 60, seed, processors=[prefer_banned])

    assert all(set(sampled([], seed)) & banned for seed in range(2))  # without the bias: sampled at once
    # after the tool result that ends the episode, the turn ends at once instead of opening another call
    from colbench_gym.online import CONVERSATION_OVER

    call = {"type": "function", "function": {"name": "submit_answer", "arguments": {"code": "def f(): pass"}}}
    over = tok.apply_chat_template(
        [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "", "tool_calls": [call]},
         {"role": "tool", "name": "submit_answer", "content": f"Answer submitted. {CONVERSATION_OVER}"}],
        add_generation_prompt=True, tokenize=False)
    assert _sample(model, tok, tok(over, add_special_tokens=False)["input_ids"], bias, 4, 0).startswith("<|im_end|>")
    for reply in ("In metres.", "The second one; the first is over."):  # an episode that goes on
        asked = over.replace(f"Answer submitted. {CONVERSATION_OVER}", reply)
        assert _sample(model, tok, tok(asked, add_special_tokens=False)["input_ids"], bias, 16, 0).startswith("<tool_call>")
    for seed in range(4):
        ids = sampled(bias, seed)
        assert not set(ids) & (banned - stops), tok.decode(ids)
        assert all(tok.decode(ids[:i]).endswith("</tool_call>") for i, t in enumerate(ids) if t in stops), tok.decode(ids)


def test_the_opener_refuses_a_template_without_a_turn_header():
    from examples.trl_grpo import tool_call_opener_bias

    tok = _qwen_tokenizer()
    tok.chat_template = "{% for m in messages %}{{ m['content'] }}{% endfor %}"
    with pytest.raises(ValueError, match="adds no generation prompt"):
        tool_call_opener_bias(tok)


@pytest.mark.slow
def test_the_opener_on_the_default_models_tokenizer():
    """The real vocabulary has the merged closers the 0.5B model used wrongly (``}},``, ``}},\n``, a
    bare ``}}`` after an unclosed string): each is banned; the closing quote-and-braces is not."""
    from transformers import AutoTokenizer

    from examples.trl_grpo import tool_call_opener_bias
    from sweet_agent.policies.checkpoints import tokenizer_dir
    from sweet_agent.policies.default_model import default_model_status, resolve_model_path

    if not default_model_status().get("ready"):
        pytest.skip("default model not prepared (sweet-agent fetch-model)")
    tok = AutoTokenizer.from_pretrained(tokenizer_dir(resolve_model_path("Qwen/Qwen2.5-Coder-0.5B-Instruct")))
    bias = tool_call_opener_bias(tok)
    banned = {t[0] for t, b in bias if len(t) == 1 and b < 0}
    vocab = tok.get_vocab()
    assert {vocab[tok.tokenize(x)[0]] for x in ("}},", "}},\n", "}}", "}}\n")} <= banned
    assert tok('"}}', add_special_tokens=False)["input_ids"] == [vocab[tok.tokenize('"}}')[0]]]
    assert vocab[tok.tokenize('"}}')[0]] not in banned and len(banned) > 40
    net: dict[tuple, float] = {}
    for seq, b in bias:
        net[tuple(seq)] = net.get(tuple(seq), 0.0) + b

    def ids(text):
        return tuple(tok(text, add_special_tokens=False)["input_ids"])

    end = vocab["</tool_call>"]
    assert end in banned and net[ids('"}}\n') + (end,)] > 0  # </tool_call> only where the call closed
    for text in ('", "required', '?", "type', ')", "return'):  # a schema key after the argument, merged or not
        seq = ids(text)[-3:] if text[0] != '"' else ids(text)
        assert net.get(seq, 0) < 0, (text, seq)
    from examples.trl_grpo import _after_the_end

    assert tok.decode(_after_the_end(tok)).startswith(" The conversation is over.")

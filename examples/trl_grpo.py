"""ColBench with TRL's own ``GRPOTrainer(environment_factory=...)``: the TRL path as TRL documents it.

No ColBench trainer subclass, no ColBench command: TRL's trainer, a prompt dataset whose rows name
their task, and a factory of tool environments whose reward is the environment's own
(docs/trl.md). The defaults are the small CPU setting: 4 ``collab-multi:train`` tasks (details
the request states give a first answer partial credit), 2 steps of one group of 4 rollouts,
256 completion tokens an episode, temperature 0.7, LoRA, and every agent turn made one
well-formed tool call (``--tool-call-opener``, below). Without the opener the untrained 0.5B
model answers in prose: a step of 4 rollouts made no tool call, every reward 0, std 0, no
gradient (issue 39). With it, measured on these 2 cores (other jobs paused, 2026-11-27): the
first step took 164-210 s, its rollouts called tools (0.5-1.0 calls each), rewards 0 to 1/3
of the tests, reward std 0.167, grad norm 1.0-1.3: a gradient; the second step's rollouts ran
past the 256-token episode budget (3 or 4 of 4 clipped) and had none; both steps 5.3-6.5 min,
~16 GB resident at the peak. ``make grpo-example-check`` (run by ``make test``) checks the first
step's tool calls and reward std::

    python examples/trl_grpo.py                                   # the defaults above
    python examples/trl_grpo.py --max-completion-length 512       # room for long answers (slower steps)
    python examples/trl_grpo.py --tasks embedded:train --num-tasks 30 --max-steps 20
    python examples/trl_grpo.py --model path/to/checkpoint --no-lora

For GPUs, the paper-scale settings, vLLM and the SWEET critic as a second reward, see
``sweet-agent train-grpo`` (docs/training.md#online-rl).
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # environment_factory is experimental in TRL 1.16


#: Every agent turn is a tool call: it starts with these characters, then the name of one of the
#: tool env's tools (the model picks which), then that tool's argument, which the model writes.
#: WHY: the untrained 0.5B model answers in prose instead of calling a tool (issue 39: 0 tool calls,
#: every reward 0, every group's reward std 0: no gradient); made to open a call, it names the
#: task's function ("parking_fee") instead of a tool, or leaves out "arguments".
TOOL_CALL_OPENER = '<tool_call>\n{"name": "'
#: The backend tool env's tools and the one argument each takes (ColBenchToolEnv).
TOOLS = {"ask_user": "question", "submit_answer": "code"}


def tool_call_opener_bias(tokenizer, opener: str = TOOL_CALL_OPENER, tools: dict[str, str] | None = None,
                          bias: float = 100.0) -> list:
    """``sequence_bias`` for ``generate`` that makes every assistant turn one well-formed call of one of ``tools``.

    Forced (``bias`` on the next token after the turn's header and what came so far): ``opener``;
    then the first token of each tool's name gets the same bias, so the model's own preference
    picks the tool; the rest of ``NAME", "arguments": {"ARG": "`` is forced; the argument's text is
    the model's. The call is closed the one way the parser reads: the argument's closing quote and
    the JSON's ``}}`` (one token, ``"}}``) are followed by a forced newline, ``</tool_call>`` and the
    end of the turn; every other token with ``}}`` in it (``}},``, ``"}}>``, a bare ``}}`` ...) is
    banned, as are ``</tool_call>`` and ending the turn anywhere else, a new turn's header, and a
    schema key after the argument (``", "required"``, also after a token that ends in ``",`` such
    as ``?",``). WHY each rule (issue 39, Qwen2.5-Coder-0.5B on
    ``collab-multi:train``, 16 sampled first turns): without the closing rules 3 of 8 well-begun
    calls ran on with ``}},`` into a second call or ended the turn before ``}}``, and the parser
    then reads the turn as plain text (no call, reward 0). The header is what the chat template's
    generation prompt adds (Qwen: ``<|im_start|>assistant\n``). Forced tokens are sampled tokens as
    far as TRL is concerned: they stay in ``completion_ids`` and in the loss, as the exploring
    policy's openers stay in its records. Code that ends a nested dict inside the argument must
    write its ``}}`` as two tokens; an escaped quote written as ``\\`` then ``"}}`` would close the
    call early (the call then fails as the model's own malformed call would). The list form (not a
    dict with tuple keys) so that the config serialises."""
    tools = TOOLS if tools is None else tools

    def ids(text: str) -> list[int]:
        return tokenizer(text, add_special_tokens=False)["input_ids"]

    probe = [{"role": "user", "content": "x"}]
    plain = tokenizer.apply_chat_template(probe, tokenize=False)
    prompt = tokenizer.apply_chat_template(probe, tokenize=False, add_generation_prompt=True)
    if not prompt.startswith(plain) or prompt == plain:
        raise ValueError("tool call opener: the tokenizer's chat template adds no generation prompt to start a turn at")
    header, forced = ids(prompt[len(plain):]), ids(opener)
    out = [[header + forced[:k + 1], bias] for k in range(len(forced))]
    for name, arg in tools.items():
        call = ids(f'{opener}{name}", "arguments": {{"{arg}": "')
        if call[:len(forced)] != forced:
            raise ValueError(f"tool call opener: {opener!r} tokenizes differently before {name!r}; end it elsewhere")
        out += [[header + call[:k + 1], bias] for k in range(len(forced), len(call))]
    end, newline = ids("</tool_call>"), ids("\n")
    # every argument is a string, so the call's JSON closes as '"}}': then a newline (alone or merged
    # into one token with it) and </tool_call>
    last, merged = ids('"}}')[-1:], ids('"}}\n')[-1:]
    starts = [last + newline] + ([merged] if merged != newline[-1:] else [])
    out += [[last + newline, bias]] + [[start + end[:k + 1], 2 * bias] for start in starts for k in range(len(end))]
    vocab = tokenizer.get_vocab()
    ends_string = []  # '",' alone or merged with what came before ('?",'), not '\",': the argument's end
    for token in vocab.values():  # one decode per token of the vocabulary (151k for Qwen)
        text = tokenizer.decode([token])
        if "}}" in text and token not in last + merged:  # any other way to write "}}" leaves the call unclosed
            out.append([[token], -bias])
        if text.endswith('",') and not text.endswith('\\",'):
            ends_string.append(token)
    if len(end) == 1:  # </tool_call> only where forced (2 x bias there): nowhere else can the call end
        out.append([end, -bias])
    if "<|im_start|>" in vocab:  # a new turn's header inside this turn
        out.append([[vocab["<|im_start|>"]], -bias])
    for key in ("required", "return", "type", "description"):  # the tool schema's keys copied after the argument
        plain, after = ids(f'", "{key}'), ids(f' "{key}')
        out += [[plain, -bias]] + [[[t] + after, -bias] for t in ends_string if [t] + after != plain]
    stops = {t for t in (tokenizer.eos_token_id, tokenizer.pad_token_id, vocab.get("<|im_end|>"))
             if isinstance(t, int) and t >= 0}
    over = _after_the_end(tokenizer)
    for stop in sorted(stops):  # the turn ends right after </tool_call>, and at once after the episode's end
        out += [[[stop], -bias], [end + [stop], 2 * bias], [over + [stop], 3 * bias]]
    return out


def _after_the_end(tokenizer) -> list[int]:
    """The tokens a prompt ends with after the tool result that ends the episode (``... is over.``,
    the template's close of the tool message and the next assistant header), as TRL renders it.

    WHY: with every turn forced to open a call, the model went on calling tools after its answer
    was submitted (each refused: "the conversation is over") until the episode's token budget ran
    out; the turn after that result must end the completion instead."""
    from colbench_gym.online import CONVERSATION_OVER

    call = {"type": "function", "function": {"name": "submit_answer", "arguments": {"code": "x"}}}
    messages = [{"role": "user", "content": "x"}, {"role": "assistant", "content": "", "tool_calls": [call]},
                {"role": "tool", "name": "submit_answer", "content": f"Answer submitted. {CONVERSATION_OVER}"}]
    text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    start = text.rindex(CONVERSATION_OVER)  # the whole sentence: a reply that merely ends "... is over." goes on
    encoded = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    return [token for token, (_, stop) in zip(encoded["input_ids"], encoded["offset_mapping"]) if stop > start]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="Qwen/Qwen2.5-Coder-0.5B-Instruct",
                    help="checkpoint dir, cached hub id, or the default model's name (found offline: `make setup`)")
    ap.add_argument("--tasks", default="collab-multi:train",
                    help="task source: every row carries it (default: %(default)s, where details the request states "
                         "give a first answer partial credit, so a group's rewards can differ before the model asks well)")
    ap.add_argument("--num-tasks", type=int, default=4, help="dataset rows, one task each")
    ap.add_argument("--max-steps", type=int, default=2)
    ap.add_argument("--num-generations", type=int, default=4, help="rollouts of one task per GRPO group")
    ap.add_argument("--tasks-per-step", type=int, default=1,
                    help="GRPO groups (tasks) in one step's batch (2 groups of 4: 17 GB resident, killed here)")
    ap.add_argument("--max-completion-length", type=int, default=256, help="tokens per whole episode")
    ap.add_argument("--temperature", type=float, default=0.7,
                    help="sampling temperature (default: %(default)s; at 1.0 the 0.5B model's code drifts off the call)")
    ap.add_argument("--reward-mode", choices=("fraction", "success"), default="fraction")
    ap.add_argument("--no-lora", action="store_true", help="train every weight instead of a LoRA adapter")
    ap.add_argument("--tool-call-opener", default=TOOL_CALL_OPENER,
                    help="forced start of every agent turn (a tool call whose tool the model picks); '' for none")
    ap.add_argument("--output-dir", default="runs/trl-grpo")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None):
    args = parse_args(argv)
    from peft import LoraConfig
    from transformers import AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from colbench_gym import make_tool_env_factory
    from sweet_agent.grpo import build_prompt_dataset
    from sweet_agent.policies.checkpoint_layout import adapter_dir
    from sweet_agent.policies.checkpoints import load_causal_lm, tokenizer_dir
    from sweet_agent.policies.default_model import resolve_model_path

    # 1. The dataset: one row per task. Columns: prompt (the tool-use instructions as the system
    #    message, an empty user message that TRL fills with what reset() returns), kind, tasks,
    #    task_index, seed. Every row names its task, so the factory below cannot play another.
    dataset = build_prompt_dataset("backend", args.tasks, num_tasks=args.num_tasks)

    # 2. The environment factory: TRL calls it once per rollout slot; each ColBenchToolEnv holds a
    #    gym.make env, exposes ask_user(question) and submit_answer(code) as tools, and its
    #    get_reward() is the environment's reward (here: the fraction of hidden tests passed).
    factory = make_tool_env_factory("ColBench-Backend-v0", reward_mode=args.reward_mode)

    # 3. TRL's trainer, as TRL's docs show it: no reward_funcs, the environment owns the reward.
    path = resolve_model_path(args.model)
    adapter = adapter_dir(path) is not None
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir(path))
    #    Every turn opens with a tool call (the model picks which and writes it): see TOOL_CALL_OPENER.
    opener = {"sequence_bias": tool_call_opener_bias(tokenizer, args.tool_call_opener)} if args.tool_call_opener else None
    config = GRPOConfig(generation_kwargs=opener,
        output_dir=args.output_dir, max_steps=args.max_steps, num_generations=args.num_generations,
        per_device_train_batch_size=args.num_generations * args.tasks_per_step, max_completion_length=args.max_completion_length,
        max_tool_calling_iterations=10, learning_rate=1e-5, temperature=args.temperature, beta=0.0, use_cpu=True, bf16=False,
        gradient_checkpointing=False, save_strategy="no", report_to="none", logging_steps=1)
    #    The model by path; a LoRA adapter folder (a SWEET-RL or RFT run with --merge_adapter false)
    #    is merged into its base first, since TRL loads a path as a full model.
    trainer = GRPOTrainer(
        model=load_causal_lm(path, dtype="float32") if adapter else path, args=config, train_dataset=dataset,
        processing_class=tokenizer,
        environment_factory=factory,
        peft_config=None if args.no_lora else LoraConfig(r=16, lora_alpha=32, target_modules="all-linear",
                                                          task_type="CAUSAL_LM"))
    trainer.train()
    for log in trainer.state.log_history:
        if "reward" in log:
            print(f"step {log.get('step')}: reward {log['reward']:.3f} (std {log.get('reward_std', 0):.3f}, "
                  f"groups without variance {log.get('frac_reward_zero_std', 1):.2f}), "
                  f"tool calls per rollout {log.get('tools/call_frequency', 0):.2f}, {log.get('step_time', 0):.0f} s")
    return trainer


if __name__ == "__main__":
    main()

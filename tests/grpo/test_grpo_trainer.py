"""A real TRL GRPOTrainer step on CPU with the ColBench tool env (TRL's own test pattern:
a tiny random model whose ``generate`` returns scripted tool calls; env, rewards, trainer and
optimiser are the real ones)."""

from __future__ import annotations

import json
import os
from unittest.mock import patch

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

from tests.training.tiny_model import build_tiny_model, build_tiny_tokenizer  # noqa: E402

TASK_INDEX = 2


def _qwen_tool_tokenizer():
    """The tiny byte-level tokenizer with Qwen2.5's chat template (the default model's), which TRL
    recognises for tool-call parsing."""
    from trl.chat_template_utils import qwen2_5_chat_template

    tok = build_tiny_tokenizer()
    tok.chat_template = qwen2_5_chat_template
    return tok


def _call(name: str, **arguments) -> str:
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call><|im_end|>"


def _scripted_generate(tok, script: list[list[str]]):
    """``generate`` replacement: call k returns ``script[k]`` (one text per row), right-padded."""
    calls = {"n": 0}

    def fake_generate(input_ids, **kwargs):
        texts = script[calls["n"]]
        calls["n"] += 1
        assert input_ids.shape[0] == len(texts), (input_ids.shape, texts)
        ids = [tok(t, add_special_tokens=False)["input_ids"] for t in texts]
        width = max(map(len, ids))
        out = torch.full((len(ids), width), tok.pad_token_id, dtype=torch.long)
        for i, row in enumerate(ids):
            out[i, : len(row)] = torch.tensor(row)
        return torch.cat([input_ids, out.to(input_ids.device)], dim=-1)

    return fake_generate


def _args(tmp_path, **extra):
    from sweet_agent.grpo.config import ColBenchGRPOConfig

    return ColBenchGRPOConfig(
        output_dir=str(tmp_path / "out"), learning_rate=0.1, per_device_train_batch_size=2, num_generations=2,
        max_steps=1, max_completion_length=1024, report_to="none", use_cpu=True, gradient_checkpointing=False,
        save_strategy="no", **extra)


@pytest.fixture
def reference():
    from colbench_gym.tasks.sources import resolve_task_source

    return resolve_task_source("collab:train", "backend")[TASK_INDEX].ground_truth


@patch.dict(os.environ, {"TRL_EXPERIMENTAL_SILENCE": "1"})
def test_grpo_step_with_env_owned_reward(tmp_path, reference) -> None:
    from colbench_gym.online import make_tool_env_factory
    from sweet_agent.grpo.data import build_prompt_dataset
    from sweet_agent.grpo.trainer import ColBenchGRPOTrainer

    tok = _qwen_tool_tokenizer()
    model = build_tiny_model(tok)
    dataset = build_prompt_dataset("backend", "collab:train", num_tasks=1, task_offset=TASK_INDEX)
    trainer = ColBenchGRPOTrainer(
        model=model, args=_args(tmp_path), train_dataset=dataset, processing_class=tok,
        environment_factory=make_tool_env_factory("ColBench-Backend-v0", tasks="collab:train",
                                                  reward_mode="fraction"))
    # The env owns the reward (weight 1, named after the adapter class); its tools are the actions.
    assert trainer.reward_func_names == ["ColBenchToolEnv"]
    assert sorted(t.__name__ for t in trainer.tools) == ["ask_user", "submit_answer"]

    script = [
        # rollout 0 asks first, rollout 1 submits the reference at once
        [_call("ask_user", question="What exactly should it return?"), _call("submit_answer", code=reference)],
        # rollout 0 then submits a wrong function; rollout 1 ends with plain text
        [_call("submit_answer", code="def nothing():\n    return None\n"), "Done.<|im_end|>"],
        ["Done.<|im_end|>"],
    ]
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    with patch.object(trainer.model, "generate", side_effect=_scripted_generate(tok, script)):
        trainer.train()

    logs = next(e for e in trainer.state.log_history if "reward" in e)
    assert logs["rewards/ColBenchToolEnv/mean"] == pytest.approx(0.5)  # 1.0 (reference) and 0.0 (wrong)
    assert logs["colbench/questions"] == pytest.approx(0.5)
    assert logs["colbench/turns"] == pytest.approx(1.5)
    assert logs["colbench/submitted"] == pytest.approx(1.0)
    assert logs["colbench/success"] == pytest.approx(0.5)
    assert logs["colbench/infrastructure_failures"] == 0.0
    assert logs["tools/call_frequency"] > 0
    changed = [n for n, p in trainer.model.named_parameters() if not torch.equal(before[n], p)]
    assert changed, "no parameter changed after one optimisation step"


def _save(model, tok, path):
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return str(path)


@patch.dict(os.environ, {"TRL_EXPERIMENTAL_SILENCE": "1"})
def test_critic_reward_is_a_second_weighted_reward(tmp_path, reference) -> None:
    from colbench_gym.online import make_tool_env_factory
    from sweet_agent.critic.advantages import turn_advantages
    from sweet_agent.grpo.critic_reward import SweetCriticReward
    from sweet_agent.grpo.data import build_prompt_dataset
    from sweet_agent.grpo.trainer import ColBenchGRPOTrainer

    tok = _qwen_tool_tokenizer()
    critic_dir = _save(build_tiny_model(tok, seed=1), tok, tmp_path / "critic")
    ref_dir = _save(build_tiny_model(tok, seed=2), tok, tmp_path / "critic-ref")
    (tmp_path / "critic" / "sweet_critic.json").write_text(json.dumps(
        {"reference_model": ref_dir, "critic_type": "logratio", "normalize": "turn", "use_privileged_info": True}))
    critic = SweetCriticReward(critic_dir)

    weight = 0.5
    trainer = ColBenchGRPOTrainer(
        model=build_tiny_model(tok), args=_args(tmp_path, critic_weight=weight, reward_weights=[weight]),
        train_dataset=build_prompt_dataset("backend", "collab:train", num_tasks=1, task_offset=TASK_INDEX),
        processing_class=tok, reward_funcs=[critic],
        environment_factory=make_tool_env_factory("ColBench-Backend-v0", tasks="collab:train",
                                                  reward_mode="fraction"))
    assert trainer.reward_func_names == ["sweet_critic", "ColBenchToolEnv"]
    assert trainer.reward_weights.tolist() == [weight, 1.0]

    script = [[_call("ask_user", question="Which rate applies?"), _call("submit_answer", code=reference)],
              [_call("submit_answer", code="def nothing():\n    return None\n"), "Done.<|im_end|>"],
              ["Done.<|im_end|>"]]
    with patch.object(trainer.model, "generate", side_effect=_scripted_generate(tok, script)):
        trainer.train()

    # The critic scored each rollout's ColBench dialogue with the reference solution as privileged
    # information, exactly as offline scoring does: recompute it from the finished envs.
    envs = trainer.environments
    offline = [sum(turn_advantages(critic.critic.model, critic.critic.ref, critic.critic.tokenizer, e.messages,
                                   e.env.unwrapped.task.ground_truth, normalize="turn")) for e in envs]
    assert all(abs(s) > 0 for s in offline)
    assert envs[0].messages[1]["content"] == "Which rate applies?"
    logs = next(e for e in trainer.state.log_history if "reward" in e)
    assert logs["rewards/sweet_critic/mean"] == pytest.approx(sum(offline) / 2, rel=1e-4)
    assert logs["reward"] == pytest.approx(weight * sum(offline) / 2 + 0.5, rel=1e-4)


def test_episode_statistics_leave_an_unscored_episode_out_of_success() -> None:
    from sweet_agent.grpo.trainer import EPISODE_STATS, _episode_row

    class Env:
        questions, drafts, turns, submitted, success, infrastructure_failure = 1, 0, 2, True, True, None

    class Failed(Env):
        success, infrastructure_failure = False, "simulator_error"

    rows = torch.tensor([_episode_row(Env()), _episode_row(Failed())]).nanmean(dim=0).tolist()
    stats = dict(zip(EPISODE_STATS, rows))
    assert stats["success"] == 1.0 and stats["infrastructure_failures"] == 0.5 and stats["turns"] == 2.0

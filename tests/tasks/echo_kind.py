"""A throwaway third environment kind, "echo", built the way the kinds table asks a new kind to be:
its task class, environment, simulator, score entry and evaluator, each its own small piece here
(tests/tasks/test_third_kind.py registers it through the table alone). The person holds a secret
word; the agent asks, then answers with the word; the answer scores 1 when it is the word."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

from colbench_gym.envs.base import ColBenchEnv
from colbench_gym.evaluation.records import load_task_answers
from colbench_gym.jsonl import write_jsonl_atomic
from colbench_gym.simulators import HumanSimulator
from colbench_gym.tasks.identity import task_identity
from colbench_gym.tasks.kinds import EnvKind
from colbench_gym.verdicts import Verdict, score_answer


@dataclass(frozen=True)
class EchoTask:
    problem_description: str
    ground_truth: str  # the secret word

    @property
    def task_id(self) -> str:
        return task_identity(self.to_record())

    @classmethod
    def from_record(cls, record: Any, where: str = "task", **_: Any) -> EchoTask:
        if isinstance(record, EchoTask):
            return record
        return cls(str(record["problem_description"]), str(record["secret_word"]))

    def to_record(self) -> dict[str, Any]:
        return {"problem_description": self.problem_description, "secret_word": self.ground_truth}


class EchoEnv(ColBenchEnv):
    """An echo episode: ask for the word, then answer with it."""

    kind = "echo"

    def _score(self, answer: str) -> tuple[float, dict[str, Any]]:
        verdict = score_answer(answer, self.task)
        return verdict.reward, verdict.info()


class EchoPerson(HumanSimulator):
    kind = "echo"

    def respond(self, task: EchoTask, dialogue: Any, **context: Any) -> str:
        return f"The word is {task.ground_truth}."


def score(answer: str, task: EchoTask) -> Verdict:
    hit = answer.strip().strip(".").lower() == task.ground_truth.lower()
    return Verdict(reward=float(hit), evidence={"success": hit})


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("input")
    parser.add_argument("--output", "-o", required=True)


def run(args: argparse.Namespace) -> int:
    out = []
    for record, task, answer in load_task_answers(args.input, EchoTask):
        verdict = score_answer(answer, task)
        out.append({**record, "reward": verdict.reward, "success": verdict.evidence["success"]})
    write_jsonl_atomic(args.output, out)
    print(f"scored {len(out)} echo answers: success {sum(r['success'] for r in out)}/{len(out)}")
    return 0


ECHO = EnvKind(
    name="echo", env_id="ColBench-Echo-v0", env=f"{__name__}:EchoEnv", task_cls=EchoTask,
    is_record=lambda task: "secret_word" in task, record_shape="echo: a 'secret_word'", reply_chars=200,
    generators={}, simulators={"offline": f"{__name__}:EchoPerson"}, evaluator=__name__,
    evaluator_help="score echo answers", score=f"{__name__}:score", tool_env=f"{__name__}:EchoEnv",
)

"""ColBench tasks: official record shapes, loaders, embedded sets and the procedural generator."""

from colbench_gym.tasks.loaders import iter_jsonl, load_hf_tasks, load_tasks
from colbench_gym.tasks.records import BackendTask, FrontendTask, TaskFormatError
from colbench_gym.tasks.sources import (
    GeneratedTaskSource,
    ListTaskSource,
    TaskSource,
    resolve_task_source,
)

__all__ = [
    "BackendTask", "FrontendTask", "TaskFormatError", "TaskSource", "ListTaskSource",
    "GeneratedTaskSource", "iter_jsonl", "load_tasks", "load_hf_tasks", "resolve_task_source",
]

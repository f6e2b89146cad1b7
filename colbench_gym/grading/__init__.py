"""Sandboxed grading of backend answers: the agent's code never runs where the verdict is made.

```python
from colbench_gym.grading import get_default_grader
res = get_default_grader().grade(code, task)   # GradeResult: passed, total, per_test, error
```
See :class:`BackendGrader` for options and docs/grading.md for the semantics and the threat model.
"""

from colbench_gym.grading.grader import BackendGrader, GradeResult, get_default_grader
from colbench_gym.grading.sandbox import Isolation, SandboxUnavailable, probe_isolation

__all__ = ["BackendGrader", "GradeResult", "Isolation", "SandboxUnavailable", "get_default_grader",
           "probe_isolation"]

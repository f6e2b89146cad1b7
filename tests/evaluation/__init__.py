"""Tests of ``sweet_agent/evaluation/`` (the measurements and the report of ``sweet-agent evaluate``).
The benchmark's ``colbench evaluate`` (``colbench_gym/evaluation/``) is tested with its kinds:
tests/grading/test_evaluate_*.py (backend), tests/frontend/test_evaluate_frontend.py,
tests/tasks/test_task_audit*.py."""

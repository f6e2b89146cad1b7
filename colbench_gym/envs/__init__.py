"""The ColBench environments (one per module); registration lives in ``colbench_gym/__init__``."""

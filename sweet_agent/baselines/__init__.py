"""Baselines of the paper: rejection fine-tuning (``rft``) and multi-turn DPO (``mtdpo``)."""

"""Kimi-K3 accuracy benchmarks for inspect-ai: OCRBench, MMMU Pro (vision) and ToolCall.

``formats`` reads the datasets from local folders and scores answers (plain Python, no
inspect import); ``tasks`` holds the inspect tasks (``inspect eval kimi_evals/tasks.py@ocrbench``).
"""

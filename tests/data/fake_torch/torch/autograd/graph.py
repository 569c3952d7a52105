"""Stands for torch/autograd/graph.py in test_pyframes (see __init__.py)."""


def _engine_run_backward(engine, args):
    return engine(*args)  # mark:engine_call

"""Stands for torch/autograd/__init__.py in test_pyframes.

backward() reaches the engine through graph._engine_run_backward, as torch 2.2 and later do, or
(direct=True) calls it itself, as older versions did. engine is a ctypes function: calling it runs
no Python frame and releases the GIL, as the engine's binding does. Lines marked "# mark:NAME" are
checked by tests/unit/test_pyframes.c.
"""
from . import graph


def backward(engine, args, direct=False):
    if direct:
        return engine(*args)  # mark:direct_engine_call
    return graph._engine_run_backward(engine, args)  # mark:init_backward

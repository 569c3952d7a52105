"""A stand-in for the torch package in test_pyframes: only the autograd entry points, at the
paths the frame walker recognizes (tests/data/pyframes_helper.py imports it)."""

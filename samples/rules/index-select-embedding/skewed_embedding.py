"""index-select-embedding/skewed_embedding.py - skewed.py with the table read through F.embedding.

The model, skewed ids, labels and steps of skewed.py (its `main`), with the lookup written as
`F.embedding(ids, weight)`, what nn.Embedding calls: the forward is the same gather; the backward is
embedding_dense_backward, which sorts the ids and sums each row's gradients once, without contention. Measured
on the H200 (2026-12-02): 11.40 ms a step against skewed.py's 8.25 ms: at these sizes the "fix" is
slower, which is why skewed.py is reported as information only. (Recorded as negative_skewed_embedding.py.)

Seen at the CUDA level, per steady step: `vectorized_gather_kernel` first, the sort of the ids and the
EmbeddingBackwardKernel kernels in the backward, no `indexFuncLargeIndex`. No index-select-embedding finding.

    python3 skewed_embedding.py [--steps 40] [--warmup 5] [--ids N] [--rows N] [--dim N] [--fields N]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from skewed import main  # noqa: E402

main(__doc__, "embedding")

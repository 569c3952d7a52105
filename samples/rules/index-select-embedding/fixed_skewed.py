"""index-select-embedding/fixed_skewed.py - bad_skewed.py with the table read through F.embedding.

The model, skewed ids, labels and steps of bad_skewed.py (its `main`), with the lookup written as
`F.embedding(ids, weight)`, what nn.Embedding calls: the forward is the same gather; the backward is
embedding_dense_backward, which sorts the ids and sums each row's gradients once, so the hot rows cost no
contention. The step time beside bad_skewed.py's, with the same arguments, is the pattern's measured cost
(to be confirmed on the GPU).

Seen at the CUDA level, per steady step: `vectorized_gather_kernel` first, the sort of the ids and the
EmbeddingBackwardKernel kernels in the backward, no `indexFuncLargeIndex`. No index-select-embedding finding.

    python3 fixed_skewed.py [--steps 40] [--warmup 5] [--ids N] [--rows N] [--dim N] [--fields N] [--skew S]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bad_skewed import main  # noqa: E402

main(__doc__, "embedding")

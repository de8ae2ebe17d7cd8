#!/usr/bin/env python3
"""Host (CPU) time PyTorch eager spends issuing one op of a training step, with autograd.

What it measures: the framework's per-op dispatch cost (Python call, dispatcher, autograd
graph recording, and the autograd engine running the op's backward node), on tensors so small
that the op's own work is negligible. On a GPU the same host path runs, plus the CUDA launch
itself; the device time of the kernels is what the cost model adds separately. The figure
feeds `strategy.host_overhead` (docs/scenario.md) through validate/data/rules.json.

Run: python3 bench/host_overhead.py   (needs PyTorch; Debian 12: apt-get install python3-torch)
Prints microseconds per forward op and per backward op, the median of several repeats.
"""
import statistics
import time

import torch
import torch.nn.functional as F

torch.set_num_threads(1)
CHAIN = 200      # ops in one measured chain
REPEATS = 15


def chain_time(make_op, backward):
    x0 = torch.randn(4, 8, requires_grad=True)
    samples = []
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        x = x0
        for _ in range(CHAIN):
            x = make_op(x)
        t1 = time.perf_counter()
        if backward:
            x.sum().backward()
        t2 = time.perf_counter()
        samples.append((t1 - t0, t2 - t1))
    fwd = statistics.median(s[0] for s in samples) / CHAIN
    bwd = statistics.median(s[1] for s in samples) / CHAIN
    return fwd, bwd


def main():
    w = torch.randn(8, 8, requires_grad=True)
    ops = {
        "mul (elementwise)": lambda x: x * 1.0001,
        "gelu (activation)": lambda x: F.gelu(x),
        "linear (matmul, no bias)": lambda x: F.linear(x, w),
        "dropout": lambda x: F.dropout(x, 0.1, training=True),
        "layer_norm": lambda x: F.layer_norm(x, (8,)),
        "softmax": lambda x: torch.softmax(x, dim=-1),
    }
    chain_time(ops["mul (elementwise)"], True)  # warm up
    print(f"torch {torch.__version__}, 1 thread, {CHAIN} ops per chain, median of {REPEATS}")
    print(f"{'op':28s} {'forward us':>11s} {'backward us':>12s}")
    fwds, bwds = [], []
    for name, op in ops.items():
        f, b = chain_time(op, True)
        fwds.append(f)
        bwds.append(b)
        print(f"{name:28s} {f * 1e6:11.2f} {b * 1e6:12.2f}")
    print(f"{'mean':28s} {statistics.mean(fwds) * 1e6:11.2f} {statistics.mean(bwds) * 1e6:12.2f}")


if __name__ == "__main__":
    main()

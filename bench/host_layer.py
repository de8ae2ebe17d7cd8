#!/usr/bin/env python3
"""Host (CPU) time of one transformer layer of a training step in eager PyTorch, as a stack
issues it: the Python modules, autograd, dispatch and the activation checkpointing around the
ops, on tensors so small that the ops' own work is negligible.

bench/host_overhead.py measures one bare op at a time (about 4 us). A real layer issues more
ops than the fused kernels the cost model lists (views made contiguous, bias adds, dropout
masks, the backward's extra reductions and copies), each with its module's Python around it.
This script builds the layer of Megatron-DeepSpeed's GPT at tp = 1 (ParallelTransformerLayer:
LayerNorm, QKV linear, baddbmm scores, fused scale-mask-softmax (one op), attention dropout,
bmm, output projection, bias-dropout-add, LayerNorm, 4h MLP with bias-GeLU, bias-dropout-add)
with full activation checkpointing per layer (torch.utils.checkpoint, as its
checkpoint_activations), runs forward and backward over a stack of such layers and reports:
  - host microseconds per layer for the forward, and for the backward with its recomputation;
  - ATen ops issued per layer in each (a TorchDispatchMode counter), so the figure can be
    compared with the kernels the cost model lists for the layer.
On a GPU the same host path runs plus the CUDA launch of each op's kernel(s); the device time is
what the cost model adds separately.

Run: python3 bench/host_layer.py   (needs PyTorch; Debian 12: apt-get install python3-torch)
"""
import statistics
import time

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint
from torch.utils._python_dispatch import TorchDispatchMode

torch.set_num_threads(1)
HIDDEN, HEADS, SEQ, BATCH = 64, 4, 16, 1
LAYERS = 24
REPEATS = 15


class Layer(nn.Module):
    """Megatron-DeepSpeed's ParallelTransformerLayer at tp = 1, op for op."""

    def __init__(self):
        super().__init__()
        h = HIDDEN
        self.norm1 = nn.LayerNorm(h)
        self.qkv = nn.Linear(h, 3 * h)
        self.proj = nn.Linear(h, h, bias=False)
        self.proj_bias = nn.Parameter(torch.zeros(h))
        self.norm2 = nn.LayerNorm(h)
        self.fc1 = nn.Linear(h, 4 * h, bias=False)
        self.fc1_bias = nn.Parameter(torch.zeros(4 * h))
        self.fc2 = nn.Linear(4 * h, h, bias=False)
        self.fc2_bias = nn.Parameter(torch.zeros(h))
        self.mask = torch.tril(torch.ones(SEQ, SEQ, dtype=torch.bool)).logical_not()

    def attention(self, x):  # x: [s, b, h]
        s, b, h = x.shape
        d = h // HEADS
        mixed = self.qkv(x).view(s, b, HEADS, 3 * d)
        q, k, v = torch.split(mixed, d, dim=-1)
        q = q.reshape(s, b * HEADS, d).transpose(0, 1)
        k = k.reshape(s, b * HEADS, d).transpose(0, 1)
        scores = torch.empty(b * HEADS, s, s, dtype=x.dtype)
        scores = torch.baddbmm(scores, q, k.transpose(1, 2), beta=0.0, alpha=d ** -0.5)
        probs = torch.softmax(scores.masked_fill(self.mask, -10000.0), dim=-1)  # fused in Megatron
        probs = F.dropout(probs, 0.1, training=True)
        v = v.reshape(s, b * HEADS, d).transpose(0, 1)
        context = torch.bmm(probs, v).transpose(0, 1).contiguous().view(s, b, h)
        return self.proj(context)

    def forward(self, x):
        y = self.attention(self.norm1(x))
        x = x + F.dropout(y + self.proj_bias, 0.1, training=True)  # bias-dropout-add
        z = self.fc1(self.norm2(x))
        z = F.gelu(z + self.fc1_bias)  # bias-GeLU
        z = self.fc2(z)
        return x + F.dropout(z + self.fc2_bias, 0.1, training=True)


class OpCounter(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.ops = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops += 1
        return func(*args, **(kwargs or {}))


def step(layers, x0):
    x = x0
    for layer in layers:
        x = checkpoint(layer, x, use_reentrant=True)
    return x


def main():
    layers = nn.ModuleList(Layer() for _ in range(LAYERS))
    x0 = torch.randn(SEQ, BATCH, HIDDEN, requires_grad=True)
    for _ in range(3):  # warm up
        step(layers, x0).sum().backward()
    fwd, bwd = [], []
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        out = step(layers, x0).sum()
        t1 = time.perf_counter()
        out.backward()
        t2 = time.perf_counter()
        fwd.append((t1 - t0) / LAYERS)
        bwd.append((t2 - t1) / LAYERS)
    with OpCounter() as counter:
        out = step(layers, x0).sum()
    fwd_ops = counter.ops / LAYERS
    with OpCounter() as counter:
        out.backward()
    bwd_ops = counter.ops / LAYERS
    f, b = statistics.median(fwd), statistics.median(bwd)
    print(f"torch {torch.__version__}, 1 thread, {LAYERS} checkpointed layers, median of {REPEATS}")
    print(f"forward:                       {f * 1e6:8.1f} us per layer, {fwd_ops:5.0f} ATen ops")
    print(f"backward with recomputation:   {b * 1e6:8.1f} us per layer, {bwd_ops:5.0f} ATen ops")
    print(f"per op:                        {(f + b) / (fwd_ops + bwd_ops) * 1e6:8.2f} us")


if __name__ == "__main__":
    main()

# SPDX-License-Identifier: Apache-2.0
"""A small real training loop for the H200 check (bench/h200/run.sh): a GPT-like decoder in
plain PyTorch, bf16 autocast, fused AdamW, random tokens (nothing to download), for a fixed
wall-clock time.  It logs as torchtitan does ("step: N  loss: ...  tps: ...") and in pfi's own
protocol ("pfi: tokens=N t=S"), so both of pfi's parsers can be checked on real output."""
import argparse
import datetime
import math
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.proj = nn.Linear(d, d, bias=False)
        self.ln2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 4 * d, bias=False)
        self.out = nn.Linear(4 * d, d, bias=False)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        shape = (b, t, self.heads, c // self.heads)
        q, k, v = (z.view(shape).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class GPT(nn.Module):
    def __init__(self, vocab, seq, d, layers, heads):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(seq, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.head.weight = self.tok.weight

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.ln(x))


def log(msg):
    stamp = datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S,%f")[:-3]
    print(f"[titan] {stamp} - root - INFO - {msg}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--duration", type=float, default=40.0)
    ap.add_argument("--layers", type=int, default=24)
    ap.add_argument("--dim", type=int, default=1536)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--vocab", type=int, default=50304)
    ap.add_argument("--log-every", type=int, default=5)
    a = ap.parse_args()
    t0 = time.monotonic()
    dev = torch.device("cuda")
    torch.manual_seed(0)
    model = GPT(a.vocab, a.seq, a.dim, a.layers, a.heads).to(dev)
    n_params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, betas=(0.9, 0.95), fused=True)
    tokens_per_step = a.batch * a.seq
    flops_per_token = 6 * n_params + 12 * a.layers * a.dim * a.seq
    peak = 989e12  # dense bf16, H100/H200 SXM datasheet
    props = torch.cuda.get_device_properties(dev)
    log(f"Model gpt-{n_params / 1e6:.0f}M: {a.layers} layers, dim {a.dim}, {a.heads} heads, "
        f"seq {a.seq}, batch {a.batch} ({tokens_per_step} tokens/step) on {props.name}")
    print(f"global batch size: {a.batch}  sequence length: {a.seq}", flush=True)
    tokens = 0
    step = 0
    loss = None
    last_t, last_tokens = time.monotonic(), 0
    print(f"pfi: tokens=0 t={time.monotonic() - t0:.3f}", flush=True)
    while time.monotonic() - t0 < a.duration:
        x = torch.randint(0, a.vocab, (a.batch, a.seq + 1), device=dev)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(x[:, :-1])
            loss = F.cross_entropy(logits.float().view(-1, a.vocab), x[:, 1:].reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        step += 1
        tokens += tokens_per_step
        if step % a.log_every == 0:
            lv = loss.item()  # synchronizes, so the times below are real
            now = time.monotonic()
            tps = (tokens - last_tokens) / (now - last_t)
            last_t, last_tokens = now, tokens
            mem = torch.cuda.max_memory_allocated(dev) / 2**30
            memp = 100 * torch.cuda.max_memory_allocated(dev) / props.total_memory
            tfl = tps * flops_per_token / 1e12
            log(f"step: {step:2d}  loss: {lv:8.4f}  memory: {mem:5.2f}GiB({memp:.2f}%)  "
                f"tps: {tps:,.0f}  tflops: {tfl:,.2f}  mfu: {100 * tfl * 1e12 / peak:.2f}%")
            print(f"pfi: tokens={tokens} t={now - t0:.3f} step={step}", flush=True)
    torch.cuda.synchronize()
    print(f"pfi: tokens={tokens} t={time.monotonic() - t0:.3f} step={step}", flush=True)
    log(f"Training completed: {step} steps, {tokens} tokens in {time.monotonic() - t0:.1f} s")
    return 0 if loss is not None and math.isfinite(loss.item()) else 1


if __name__ == "__main__":
    sys.exit(main())

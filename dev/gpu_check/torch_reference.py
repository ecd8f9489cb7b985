#!/usr/bin/env python3
"""dev/gpu_check/torch_reference.py — PyTorch's kernels timed on the same card.

gpu_check.sh runs it after check_kernels --time, output into timing.log: a
number from our kernels means more beside what the vendor's libraries do on
the same device, clocks and driver. When torch with CUDA is importable:
scaled_dot_product_attention, causal, bf16, head size 64, T=1024, 124M's 12
heads, at B=4 and B=64, forward and forward+backward, with the flash and the
cuDNN backends each; then torch.matmul at 124M's four layer gemms (B*T=4096
tokens, C=768). CUDA events, median of 20 after 3 warm-ups, like
dev/cuda/check_timing.c. Prints one "torchref" line per timing and a last
line "torchref summary: ...".

Exit 0 when it timed; 3 with a last line "SKIP: why" when torch or its CUDA
is missing (the row is a SKIP, not a FAIL: the reference is optional);
another status is a failure of torch itself.
"""
import statistics
import sys

B_LIST = (4, 64)
T, NH, HD, C = 1024, 12, 64, 768
REPS, WARM = 20, 3


def skip(why):
    print(f"SKIP: {why}")
    return 3


def timed(torch, fn):
    for _ in range(WARM):
        fn()
    torch.cuda.synchronize()
    ms = []
    for _ in range(REPS):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        ms.append(a.elapsed_time(b))
    return statistics.median(ms)


def main():
    try:
        import torch
    except Exception as e:  # any import failure: no reference on this machine
        return skip(f"no torch ({type(e).__name__}: {e})"[:100])
    if not torch.cuda.is_available():
        return skip(f"torch {torch.__version__} without CUDA")
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError:
        return skip(f"torch {torch.__version__}: no torch.nn.attention.sdpa_kernel")
    import torch.nn.functional as F
    dev = torch.device("cuda")
    print(f"torchref: torch {torch.__version__}, {torch.cuda.get_device_name(0)}, "
          f"cuDNN {torch.backends.cudnn.version()}")
    summary = []
    backends = (("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION))
    for B in B_LIST:
        q, k, v = (torch.randn(B, NH, T, HD, device=dev, dtype=torch.bfloat16, requires_grad=True)
                   for _ in range(3))
        dy = torch.randn(B, NH, T, HD, device=dev, dtype=torch.bfloat16)
        for name, be in backends:
            try:
                with sdpa_kernel(be):
                    fwd = timed(torch, lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True))
                    both = timed(torch, lambda: F.scaled_dot_product_attention(
                        q, k, v, is_causal=True).backward(dy))
            except RuntimeError as e:  # a backend this build or card lacks
                print(f"torchref sdpa {name} B={B}: not run ({str(e).splitlines()[0][:100]})")
                continue
            # causal: half of 4*B*NH*T*T*HD forward, 2.5x that forward+backward
            fl = 2.0 * B * NH * T * T * HD
            print(f"torchref sdpa {name} B={B} T={T} NH={NH} hd={HD}: forward {fwd:.4f} ms "
                  f"({fl / fwd / 1e9:.1f} TFLOP/s), backward {both - fwd:.4f} ms")
            summary.append(f"{name} B{B} fwd {fwd:.3f} bwd {both - fwd:.3f} ms")
    M = 4 * T
    for name, K, N in (("qkv", C, 3 * C), ("attn proj", C, C), ("fc", C, 4 * C), ("fc proj", 4 * C, C)):
        a = torch.randn(M, K, device=dev, dtype=torch.bfloat16)
        w = torch.randn(K, N, device=dev, dtype=torch.bfloat16)
        ms = timed(torch, lambda: torch.matmul(a, w))
        print(f"torchref matmul {name} {M}x{K}x{N} bf16: {ms:.4f} ms ({2.0 * M * K * N / ms / 1e9:.1f} TFLOP/s)")
        summary.append(f"mm {name} {ms:.3f} ms")
    print("torchref summary: " + "; ".join(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Triton BF16 matmul (FP32 accumulate), 4096^3, a good Hopper configuration.

Block 128x128x64, 4 warps (one warpgroup), 4 stages, grouped program order: on sm_90 Triton emits
warpgroup MMA (HGMMA) fed from shared memory. Triton keeps Python line info by default, so ncu
--import-source yes embeds this file. Three warm-up launches (the first compiles), then the profiled
one (ncu --launch-skip 3).
"""
import torch
import triton
import triton.language as tl

N = 4096
BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M = 128, 128, 64, 8


@triton.jit
def matmul_bf16(a_ptr, b_ptr, c_ptr, M, N, K,
                stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _ in range(0, K // BLOCK_K):
        a = tl.load(a_ptrs)
        b = tl.load(b_ptrs)
        acc = tl.dot(a, b, acc)  # bf16 x bf16 -> fp32 on the tensor cores
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(tl.bfloat16))


a = torch.randn(N, N, device="cuda", dtype=torch.bfloat16)
b = torch.randn(N, N, device="cuda", dtype=torch.bfloat16)
c = torch.empty(N, N, device="cuda", dtype=torch.bfloat16)
grid = ((N // BLOCK_M) * (N // BLOCK_N),)


def launch():
    matmul_bf16[grid](a, b, c, N, N, N, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                      c.stride(0), c.stride(1), BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
                      GROUP_M=GROUP_M, num_warps=4, num_stages=4)


for _ in range(3):
    launch()
start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
start.record()
launch()
stop.record()
torch.cuda.synchronize()
ms = start.elapsed_time(stop)
ref = torch.matmul(a, b).float()
err = float((c.float() - ref).abs().max() / ref.abs().max())
print(f"triton bf16 matmul {N}^3: {ms:.3f} ms, {2 * N**3 / ms / 1e9:.0f} TFLOP/s, max rel err {err:.2e} "
      "(under ncu this is a replayed, serialized time)")

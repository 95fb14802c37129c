"""The Triton GEMM that aispflow's `triton` baseline runs: one kernel, a list of autotune configurations.

C[M x N] = scale_a * scale_b * A[M x K] * B, row-major, fp32 accumulation, output bf16. B is stored K x N
(B_NT = False) or N x K (B_NT = True, a Linear weight; fp8 always, so that wgmma reads K-major operands).
Written after Triton's matmul tutorial: grouped tile order for L2 reuse, masked edges in M.

aot.py compiles it ahead of time for sm_90a (no GPU needed); bench/triton_do_bench.py compiles the same source
with the same arguments on the GPU host to time it with triton.testing.do_bench.
"""
import triton
import triton.language as tl


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, scale_a_ptr, scale_b_ptr, M, N, K,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                  B_NT: tl.constexpr, SCALED: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    # Rows past M wrap around (their results are masked at the store), so loads need no mask in M.
    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_am[:, None] * K + offs_k[None, :]
    if B_NT:
        b_ptrs = b_ptr + offs_bn[None, :] * K + offs_k[:, None]
    else:
        b_ptrs = b_ptr + offs_k[:, None] * N + offs_bn[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    # K is a multiple of BLOCK_K (the plugin's check() says so): no masks in the main loop.
    for _ in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs)
        b = tl.load(b_ptrs)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K if B_NT else BLOCK_K * N
    if SCALED:
        acc = acc * (tl.load(scale_a_ptr) * tl.load(scale_b_ptr))
    c = acc.to(c_ptr.dtype.element_ty)
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + offs_cm[:, None] * N + offs_cn[None, :]
    tl.store(c_ptrs, c, mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


# (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps, num_stages): Triton's Hopper matmul configurations, plus
# narrow-M tiles for decode shapes (M <= 64) and BLOCK_K = 64 tiles for K that is not a multiple of 128 (gpt-oss's
# hidden size 2880).
CONFIGS = {
    "bf16": [(128, 256, 64, 8, 8, 3), (128, 128, 64, 8, 4, 4), (128, 256, 64, 8, 8, 4), (256, 128, 64, 8, 8, 3),
             (64, 256, 64, 8, 4, 4), (64, 128, 64, 8, 4, 4), (64, 64, 128, 8, 4, 4)],
    "fp8_e4m3": [(128, 256, 128, 8, 8, 3), (128, 128, 128, 8, 4, 4), (256, 128, 128, 8, 8, 3),
                 (64, 128, 128, 8, 4, 4), (128, 128, 64, 8, 4, 4), (64, 64, 64, 8, 4, 4)],
}
# The storage of B each dtype is compiled for (aispflow stores fp8's B as N x K always).
LAYOUTS = {"bf16": ["nn", "nt"], "fp8_e4m3": ["nt"]}
ELEMENT = {"bf16": "*bf16", "fp8_e4m3": "*fp8e4nv"}


def config_name(dtype, layout, cfg):
    bm, bn, bk, g, w, s = cfg
    return f"triton_{dtype}_{layout}_{bm}x{bn}x{bk}_g{g}_w{w}_s{s}"


def source(dtype, layout, cfg):
    """The ASTSource and compile options of one configuration (the same on the build machine and the GPU host)."""
    from triton.compiler import ASTSource
    bm, bn, bk, g, w, s = cfg
    signature = {"a_ptr": ELEMENT[dtype], "b_ptr": ELEMENT[dtype], "c_ptr": "*bf16", "scale_a_ptr": "*fp32",
                 "scale_b_ptr": "*fp32", "M": "i32", "N": "i32", "K": "i32"}
    constexprs = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": g, "B_NT": layout == "nt",
                  "SCALED": dtype == "fp8_e4m3"}
    for name in constexprs:
        signature[name] = "constexpr"
    # Divisibility by 16 of the operand pointers, N and K (what Triton's JIT would infer at 4096^3): aligned,
    # vectorised, pipelined loads. The plugin's check() declines cases where N or K is not a multiple of 16.
    names = list(matmul_kernel.arg_names)
    attrs = {(names.index(n),): [["tt.divisibility", 16]] for n in ("a_ptr", "b_ptr", "c_ptr", "N", "K")}
    return ASTSource(fn=matmul_kernel, signature=signature, constexprs=constexprs, attrs=attrs), \
        {"num_warps": w, "num_stages": s}

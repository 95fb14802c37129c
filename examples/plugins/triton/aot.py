#!/usr/bin/env python3
"""Compiles matmul.py's configurations ahead of time for sm_90a with Triton's own compiler, on a machine without a
GPU, into OUT_DIR/<config>.cubin plus OUT_DIR/manifest.tsv: the launch metadata the loader plugin
(triton_loader.cpp) reads. No Python runs when aispflow measures.

    python3 aot.py OUT_DIR [--jobs N]

manifest.tsv: a `# triton <version> target sm_90a` line, a `# columns ...` line, then one line per configuration:
    name dtype layout cubin kernel num_warps shared_bytes block_m block_n block_k group_m num_stages sha256 args
where args is the kernel's parameter order (comma-separated; `global_scratch` and `profile_scratch` are the two
pointers Triton appends, NULL here because these kernels need no scratch) and the grid is
cdiv(M, block_m) * cdiv(N, block_n) programs of num_warps * 32 threads.
"""
import argparse
import concurrent.futures
import hashlib
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
COLUMNS = ["name", "dtype", "layout", "cubin", "kernel", "num_warps", "shared_bytes", "block_m", "block_n", "block_k",
           "group_m", "num_stages", "sha256", "args"]


def compile_one(job):
    sys.path.insert(0, HERE)
    import triton
    from triton.backends.compiler import GPUTarget
    import matmul
    dtype, layout, cfg, out_dir = job
    src, options = matmul.source(dtype, layout, cfg)
    kernel = triton.compile(src, target=GPUTarget("cuda", 90, 32), options=options)
    md = kernel.metadata
    if md.global_scratch_size or md.profile_scratch_size:
        raise RuntimeError(f"{matmul.config_name(dtype, layout, cfg)} needs scratch memory; the loader passes none")
    if md.num_ctas != 1 or md.launch_cooperative_grid or md.launch_pdl:
        raise RuntimeError("the loader launches plain grids of one CTA per program")
    cubin = kernel.asm["cubin"]
    name = matmul.config_name(dtype, layout, cfg)
    with open(os.path.join(out_dir, name + ".cubin.tmp"), "wb") as f:
        f.write(cubin)
    os.replace(os.path.join(out_dir, name + ".cubin.tmp"), os.path.join(out_dir, name + ".cubin"))
    bm, bn, bk, g, w, s = cfg
    args = "a,b,c,scale_a,scale_b,M,N,K,global_scratch,profile_scratch"
    row = [name, dtype, layout, name + ".cubin", md.name, md.num_warps, md.shared, bm, bn, bk, g, s,
           hashlib.sha256(cubin).hexdigest(), args]
    return "\t".join(str(v) for v in row)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out_dir")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    sys.path.insert(0, HERE)
    import triton
    import matmul
    os.makedirs(args.out_dir, exist_ok=True)
    jobs = [(d, lay, cfg, args.out_dir) for d, cfgs in matmul.CONFIGS.items() for lay in matmul.LAYOUTS[d] for cfg in cfgs]
    with concurrent.futures.ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        rows = list(pool.map(compile_one, jobs))
    manifest = os.path.join(args.out_dir, "manifest.tsv")
    with open(manifest + ".tmp", "w") as f:
        f.write(f"# triton {triton.__version__} target sm_90a\n# columns " + " ".join(COLUMNS) + "\n")
        f.write("\n".join(rows) + "\n")
    os.replace(manifest + ".tmp", manifest)   # the manifest appears only once every cubin is written
    print(f"aot.py: {len(rows)} configurations -> {manifest}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Checks aispflow's harness against Triton's own: times the Triton kernels aispflow's `triton` records name with
triton.testing.do_bench, in the same session on the same GPU, and compares the medians.

    python3 bench/triton_do_bench.py --kernels DIR --sweep ARTIFACT.json --out RESULT.json

DIR holds the AOT cubins and manifest.tsv (examples/plugins/triton/aot.py). For each `ok` record of provider
`triton` on the chosen shapes, the script compiles the same source with the same arguments through Triton's
compiler on this machine (for the launcher and metadata), swaps in the AOT cubin aispflow ran (sha256 recorded),
and times it with do_bench (L2 flushed before each run, median of the repetitions). Needs torch and triton (the GPU host has both).
"""
import argparse
import datetime
import hashlib
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples", "plugins", "triton"))


def manifest(path):
    rows = {}
    columns = None
    for line in open(os.path.join(path, "manifest.tsv")):
        if line.startswith("# columns "):
            columns = line.split()[2:]
        elif line.strip() and not line.startswith("#"):
            row = dict(zip(columns, line.rstrip("\n").split("\t")))
            rows[row["name"]] = row
    return rows


def parse_config(name):
    m = re.match(r"triton_(bf16|fp8_e4m3)_(nn|nt)_(\d+)x(\d+)x(\d+)_g(\d+)_w(\d+)_s(\d+)$", name)
    dtype, layout = m.group(1), m.group(2)
    return dtype, layout, tuple(int(m.group(i)) for i in range(3, 9))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kernels", required=True)
    ap.add_argument("--sweep", required=True, nargs="+", help="gemm_sweep artifact.json files holding triton records")
    ap.add_argument("--shapes", nargs="*", default=["square_4096", "square_8192"], help="shape names to check")
    ap.add_argument("--out", required=True)
    ap.add_argument("--rep-ms", type=int, default=500)
    args = ap.parse_args()

    import torch
    import triton
    import triton.testing
    from triton.backends.compiler import GPUTarget
    import matmul

    rows = manifest(args.kernels)
    records = [r for f in args.sweep for r in json.load(open(f))["data"]["records"]]
    results = []
    compiled_by_config = {}
    for rec in records:
        if rec["provider"] != "triton" or rec["status"] != "ok" or rec["shape"]["name"] not in args.shapes:
            continue
        shape = rec["shape"]
        m, n, k = shape["m"], shape["n"], shape["k"]
        dtype, layout, cfg = parse_config(rec["kernel"])
        if rec["kernel"] not in compiled_by_config:
            src, options = matmul.source(dtype, layout, cfg)
            compiled = triton.compile(src, target=GPUTarget("cuda", 90, 32), options=options)
            host_sha = hashlib.sha256(compiled.asm["cubin"]).hexdigest()
            # Time the very bytes aispflow ran: the launcher and metadata come from this compile of the same source
            # and arguments, the cubin is replaced by the AOT one before it is loaded. (A compile here can differ in
            # bytes, e.g. by the source path in its line info, so identity is not left to chance.)
            aot = open(os.path.join(args.kernels, rows[rec["kernel"]]["cubin"]), "rb").read()
            compiled.kernel = aot
            compiled_by_config[rec["kernel"]] = (compiled, host_sha, hashlib.sha256(aot).hexdigest())
        compiled, host_sha, sha = compiled_by_config[rec["kernel"]]
        torch.manual_seed(0)
        dev = "cuda"
        a = (torch.rand(m, k, device=dev) * 2 - 1)
        b = (torch.rand(n, k, device=dev) * 2 - 1) if layout == "nt" else (torch.rand(k, n, device=dev) * 2 - 1)
        if dtype == "fp8_e4m3":
            a, b = a.to(torch.float8_e4m3fn), b.to(torch.float8_e4m3fn)
        else:
            a, b = a.to(torch.bfloat16), b.to(torch.bfloat16)
        c = torch.empty(m, n, device=dev, dtype=torch.bfloat16)
        scales = torch.tensor([0.5, 0.25], device=dev, dtype=torch.float32)
        bm, bn, bk, g, w, s = cfg
        grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn), 1, 1)
        full = (a, b, c, scales[0:1], scales[1:2], m, n, k, bm, bn, bk, g, layout == "nt", dtype == "fp8_e4m3")
        runner = compiled[grid]
        try:
            runner(*full)
            call = lambda: runner(*full)
        except TypeError:   # a launcher that takes the runtime arguments only
            runner(*full[:8])
            call = lambda: runner(*full[:8])
        torch.cuda.synchronize()
        # Correctness of what was timed, against torch (bf16 output).
        ref = (a.float() @ (b.float().t() if layout == "nt" else b.float()))
        if dtype == "fp8_e4m3":
            ref = ref * 0.125
        err = ((c.float() - ref).abs().max() / ref.abs().max()).item()
        median_ms = triton.testing.do_bench(call, warmup=100, rep=args.rep_ms, return_mode="median")
        aispflow_ms = rec["time_ms"]["median"]
        results.append({
            "shape": shape["name"], "m": m, "n": n, "k": k, "dtype": dtype, "layout": layout, "kernel": rec["kernel"],
            "cubin_sha256_aispflow": rows[rec["kernel"]]["sha256"], "cubin_sha256_do_bench": sha,
            "same_cubin": sha == rows[rec["kernel"]]["sha256"],
            "host_compile_sha256": host_sha, "host_compile_byte_identical": host_sha == sha,
            "aispflow_rest": (rec.get("timing") or {}).get("rest", "2x (default)"),
            "aispflow_median_ms": aispflow_ms, "do_bench_median_ms": median_ms,
            "aispflow_tflops": 2.0 * m * n * k / (aispflow_ms * 1e-3) / 1e12,
            "do_bench_tflops": 2.0 * m * n * k / (median_ms * 1e-3) / 1e12,
            "aispflow_over_do_bench": aispflow_ms / median_ms,
            "max_rel_err_vs_torch": err,
        })
        print(json.dumps(results[-1]), flush=True)
    try:
        driver = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                                capture_output=True, text=True).stdout.strip()
    except OSError:
        driver = "?"
    out = {"what": "aispflow's triton records vs triton.testing.do_bench on the same cubins, same session",
           "date": datetime.datetime.now(datetime.timezone.utc).isoformat(), "device": torch.cuda.get_device_name(),
           "gpu_driver": driver, "triton": triton.__version__, "torch": torch.__version__,
           "do_bench": {"warmup_ms": 100, "rep_ms": args.rep_ms, "return_mode": "median", "l2": "flushed by do_bench"},
           "results": results}
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()

"""Probe driver: the single-stage ("burst") kernel of bench/probes/burst_probe.cu vs the library's tuned variant and
cuDNN (TF32 and fp32 without TF32, NCHW / NHWC), one process, the bench's seeded weights (fp32, stride 1, batch N).

    python3 bench/probes/burst_probe.py [--only LAYER ...] [--sparsity 0.9 0.95] [--batch 1] [--json OUT.json]

Compiles the probe with nvcc (sm_90a) into a temporary .so; checks every configuration against a float64 reference on
a NaN-poisoned output before timing it.
"""
import argparse
import ctypes
import datetime
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(HERE))
import torch  # noqa: E402

from variant_times import _time_us, seeded_cases  # noqa: E402
from trt_sparse.commands.bench_kernels_cmd import layer_plan  # noqa: E402

SMEM_MAX = 227 * 1024


def build_lib():
    out = os.path.join(tempfile.mkdtemp(), "burst.so")
    subprocess.check_call(["nvcc", "-O3", "-arch=sm_90a", "-std=c++17", "--shared", "-Xcompiler", "-fPIC",
                           "-o", out, os.path.join(HERE, "burst_probe.cu")])
    lib = ctypes.CDLL(out)
    lib.burst_launch.restype = ctypes.c_int
    return lib


def cfg_list(lib):
    cfgs = []
    for i in range(lib.burst_cfg_count()):
        a, b, c = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
        lib.burst_cfg_info(i, ctypes.byref(a), ctypes.byref(b), ctypes.byref(c))
        cfgs.append((a.value, b.value, c.value))
    return cfgs


def best_pitch(iw, lw, lh, pc):
    """Box width (>= iw, multiple of 4) with the fewest bank conflicts for the lane grid (rows lr * bw + lc)."""
    best = None
    for bw in range((iw + 3) // 4 * 4, min(256, (iw + 3) // 4 * 4 + 40) + 1, 4):
        worst = 0
        for j in range(pc):
            banks = [(lr * bw + lc + j * lw) % 32 for lr in range(lh) for lc in range(lw)]
            worst = max(worst, max(banks.count(x) for x in set(banks)))
        key = (worst, bw)
        if best is None or key < best:
            best = key
    return best[1], best[0]


def build_layout(w, lay, cfg, wk, wc, cl, batch):
    """Device arrays and launch geometry of one burst configuration, or None where it does not fit."""
    lw, pc, kpw = cfg
    K, C, R, S = w.shape
    H, W, pad = lay["H"], lay["W"], lay["pad"]
    if C % cl or wk * wc != 8:
        return None
    lh = 32 // lw
    th, tw = lh, lw * pc
    P, Q = H + 2 * pad - R + 1, W + 2 * pad - S + 1
    if P * Q < 0.7 * (-(-P // th) * th) * (-(-Q // tw) * tw):
        return None  # tile mostly empty on this map
    ih, iw = th + R - 1, tw + S - 1
    bw, conf = best_pitch(iw + 3, lw, lh, pc)  # + up to 3 lead columns (aligned box start)
    if ih > 256 or bw > 256:
        return None
    kb = wk * kpw
    groups = (K + kb - 1) // kb
    cc = C // cl
    cb = cc
    while cb > 256:
        cb //= 2
    if cb * (cc // cb) != cc or (cc > cb and (cb * ih * bw * 4) % 128):
        return None
    chan = ih * bw
    lists, segs = [], []
    wsl = (cc + wc - 1) // wc
    for g in range(groups):
        for r in range(cl):
            c0 = r * cc
            ent, seg = [], np.zeros((8, kpw, 2), np.int32)
            for warp in range(8):
                kg, cs = warp % wk, warp // wk
                ca, cz = c0 + cs * wsl, min(c0 + cc, c0 + (cs + 1) * wsl)
                for kk in range(kpw):
                    k = g * kb + kg * kpw + kk
                    seg[warp, kk, 0] = len(ent)
                    if k < K and ca < cz:
                        sub = w[k, ca:cz]
                        cidx, ridx, sidx = np.nonzero(sub)
                        offs = ((cidx + ca - c0) * chan + ridx * bw + sidx) * 4
                        vals = sub[cidx, ridx, sidx].astype(np.float32).view(np.int32)
                        ent.extend(zip(vals.tolist(), offs.tolist()))
                    seg[warp, kk, 1] = len(ent)
            lists.append(ent)
            segs.append(seg)
    cap = max(2, max(len(e) for e in lists))
    cap = (cap + 1) // 2 * 2
    arr = np.zeros((len(lists), cap, 2), np.int32)
    for i, e in enumerate(lists):
        if e:
            arr[i, :len(e)] = np.array(e, np.int32)
    in_bytes = (cc * chan * 4 + 127) // 128 * 128
    red = wc * kb * th * tw * 4 if (wc > 1 or cl > 1) else 0
    in_bytes = max(in_bytes, (red + 127) // 128 * 128)
    smem = in_bytes + cap * 8 + 16
    if smem > SMEM_MAX:
        return None
    return {
        "entries": torch.from_numpy(arr).cuda(), "seg": torch.from_numpy(np.stack(segs)).cuda(),
        "geom": dict(P=P, Q=Q, BW=bw, IH=ih, Cc=cc, CB=cb, CL=cl, Kb=kb, WK=wk, WC=wc,
                     tiles_x=(Q + tw - 1) // tw, tiles_y=(P + th - 1) // th, ent_cap=cap, in_bytes=in_bytes,
                     smem=smem, conflicts=conf),
    }


def launcher(lib, ci, lay_d, x, y, lay):
    g = lay_d["geom"]
    N, C, H, W = x.shape
    K = y.shape[1]
    pad = lay["pad"]

    def run():
        rc = lib.burst_launch(ci, ctypes.c_void_p(x.data_ptr()), ctypes.c_void_p(y.data_ptr()),
                              ctypes.c_void_p(lay_d["entries"].data_ptr()), ctypes.c_void_p(lay_d["seg"].data_ptr()),
                              None, N, C, H, W, K, g["P"], g["Q"], pad, pad, g["BW"], g["IH"], g["Cc"], g["CB"],
                              g["CL"], g["Kb"], g["WK"], g["WC"], g["tiles_x"], g["tiles_y"], g["ent_cap"],
                              g["in_bytes"], g["smem"], 0, ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
        if rc != 0:
            raise RuntimeError("burst_launch rc={}".format(rc))
    return run


def dense_times(x, wt):
    out = {}
    for tf32 in (True, False):
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.backends.cudnn.allow_tf32 = tf32
        for nhwc in (False, True):
            xx = x.contiguous(memory_format=torch.channels_last) if nhwc else x
            ww = wt.contiguous(memory_format=torch.channels_last) if nhwc else wt
            t = _time_us(lambda: torch.nn.functional.conv2d(xx, ww, padding=1 if wt.shape[2] == 3 else 0))
            out["{}_{}".format("tf32" if tf32 else "fp32", "nhwc" if nhwc else "nchw")] = t
    torch.backends.cudnn.allow_tf32 = True
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", default=os.path.join(os.path.dirname(HERE), "layers.json"))
    ap.add_argument("--only", nargs="+")
    ap.add_argument("--sparsity", type=float, nargs="+", default=[0.9, 0.95])
    ap.add_argument("--batch", type=int, nargs="+", default=[1])
    ap.add_argument("--json")
    a = ap.parse_args()
    a.dtype = ["fp32"]
    torch.backends.cudnn.benchmark = True
    lib = build_lib()
    cfgs = cfg_list(lib)
    rows = []
    for lay, batch, dtype, sp, w, sw in seeded_cases(a):
        if lay["stride"] != 1 or lay.get("dilation", 1) != 1:
            continue
        torch.manual_seed(0)
        x = torch.randn(batch, lay["C"], lay["H"], lay["W"], device="cuda")
        wt = torch.from_numpy(w).cuda()
        ref = torch.nn.functional.conv2d(x.double(), wt.double(), padding=lay["pad"])
        scale = ref.abs().max().item()
        y = torch.empty_like(ref, dtype=torch.float32)
        plan = layer_plan(sw, lay, "fp32")
        plan.tune(x, y)
        lib_name = plan.describe().split("]=")[-1]
        t_lib = _time_us(lambda: plan.enqueue(x, y))
        res = []
        for ci, cfg in enumerate(cfgs):
            for wk, wc in ((8, 1), (4, 2), (2, 4), (1, 8)):
                for cl in (1, 2, 4, 8):
                    d = build_layout(w, lay, cfg, wk, wc, cl, batch)
                    if d is None:
                        continue
                    g = d["geom"]
                    blocks = g["tiles_x"] * g["tiles_y"] * ((lay["K"] + g["Kb"] - 1) // g["Kb"]) * cl * batch
                    if blocks < 66 or blocks > 132 * 16:
                        continue
                    run = launcher(lib, ci, d, x, y, lay)
                    y.fill_(float("nan"))
                    try:
                        run()
                        torch.cuda.synchronize()
                    except RuntimeError as e:
                        res.append({"cfg": cfg, "wk": wk, "wc": wc, "cl": cl, "error": str(e)})
                        continue
                    err = ((y.double() - ref).abs().max() / scale).item()
                    if not (err < 1e-5):
                        res.append({"cfg": cfg, "wk": wk, "wc": wc, "cl": cl, "rel_err": err, "error": "mismatch"})
                        print("  MISMATCH", cfg, wk, wc, cl, err, flush=True)
                        continue
                    t = _time_us(run)
                    res.append({"cfg": cfg, "wk": wk, "wc": wc, "cl": cl, "us": t, "rel_err": err, "blocks": blocks,
                                "smem": g["smem"], "conflicts": g["conflicts"]})
        ok = sorted([r for r in res if "us" in r], key=lambda r: r["us"])
        dense = dense_times(x, wt)
        tf32 = min(dense["tf32_nchw"], dense["tf32_nhwc"])
        f32 = min(dense["fp32_nchw"], dense["fp32_nhwc"])
        best = ok[0] if ok else None
        print("{:26s} N={} {:.3f}: lib {:6.2f} us ({})  burst {:6.2f} us {}  tf32 {:6.2f}  fp32 {:6.2f} | "
              "burst/lib x{:.2f}  vs tf32 x{:.2f}  vs fp32 x{:.2f}  errors {}".format(
                  lay["name"], batch, sp, t_lib, lib_name, best["us"] if best else -1,
                  (best["cfg"], best["wk"], best["wc"], best["cl"]) if best else "-", tf32, f32,
                  t_lib / best["us"] if best else 0, tf32 / best["us"] if best else 0,
                  f32 / best["us"] if best else 0, sum(1 for r in res if "error" in r)), flush=True)
        for r in ok[:4]:
            print("      ", r, flush=True)
        rows.append({"layer": lay["name"], "batch": batch, "sparsity": sp, "lib_us": t_lib, "lib_variant": lib_name,
                     "dense_us": dense, "burst": res})
        plan.close()
    if a.json:
        meta = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
                "date": datetime.datetime.utcnow().replace(microsecond=0).isoformat() + "Z",
                "commit": os.environ.get("TRT_SPARSE_COMMIT")}
        with open(a.json + ".tmp", "w") as f:
            json.dump({"meta": meta, "rows": rows}, f, indent=1)
        os.replace(a.json + ".tmp", a.json)


if __name__ == "__main__":
    main()

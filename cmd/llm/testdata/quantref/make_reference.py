#!/usr/bin/env python3
"""Writes ../quantize-reference.json: for stories260K.gguf and the synthetic tiny model, each
llama-quantize preset's per-tensor types and SHA-256 of the tensor bytes and of the whole file,
and llama.cpp's greedy continuation of "Once upon a time" (ids, margins, first-step logits); for
the mixture-of-experts models given as LABEL=PATH after OUT, the types and hashes of the MOE
presets (no greedy run: llm/model's moe-reference.json has those). See README.md."""
import hashlib, json, struct, subprocess, sys, os

# Block elements and bytes per ggml type number (ggml-common.h).
BLOCKS = {0: (1, 4), 1: (1, 2), 2: (32, 18), 3: (32, 20), 6: (32, 22), 7: (32, 24), 8: (32, 34),
          10: (256, 84), 11: (256, 110), 12: (256, 144), 13: (256, 176), 14: (256, 210),
          20: (32, 18), 23: (256, 136), 30: (1, 2)}
NAMES = {0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 6: "Q5_0", 7: "Q5_1", 8: "Q8_0", 10: "Q2_K",
         11: "Q3_K", 12: "Q4_K", 13: "Q5_K", 14: "Q6_K", 20: "IQ4_NL", 23: "IQ4_XS", 30: "BF16"}
SCALAR = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}


def tensors(path):
    b = open(path, "rb").read()
    off = 0

    def take(fmt):
        nonlocal off
        v = struct.unpack_from("<" + fmt, b, off)
        off += struct.calcsize("<" + fmt)
        return v[0]

    def string():
        nonlocal off
        n = take("Q")
        off += n
        return b[off - n:off].decode()

    def value(t):
        if t == 8:
            return string()
        if t == 9:
            et, n = take("I"), take("Q")
            return [value(et) for _ in range(n)]
        return take(SCALAR[t])

    assert b[:4] == b"GGUF"
    off = 4
    take("I")
    nt, nkv = take("Q"), take("Q")
    align = 32
    for _ in range(nkv):
        k = string()
        v = value(take("I"))
        if k == "general.alignment":
            align = v
    infos = []
    for _ in range(nt):
        name = string()
        dims = [take("Q") for _ in range(take("I"))]
        typ, o = take("I"), take("Q")
        infos.append((name, dims, typ, o))
    base = (off + align - 1) // align * align
    out = {}
    for name, dims, typ, o in infos:
        n = 1
        for d in dims:
            n *= d
        be, bb = BLOCKS[typ]
        data = b[base + o: base + o + n // be * bb]
        out[name] = {"type": NAMES[typ], "sha256": hashlib.sha256(data).hexdigest()}
    return out


def greedy(exe, model, n):
    r = subprocess.run([exe, model, str(n)], capture_output=True, text=True, check=True)
    steps = [s.split(":") for s in r.stdout.split()[1:]]
    logits = {}
    for line in r.stderr.splitlines():
        f = line.split()
        if f and f[0] in ("logits", "logits1"):
            logits[f[0]] = [round(float(x), 4) for x in f[1:]]
    return {"ids": [int(a) for a, _ in steps], "margins": [round(float(m), 4) for _, m in steps],
            "first_logits": logits["logits"]}


# The presets of the mixture-of-experts models: those with rules for 8 experts (attn_output's
# Q5_K list, and Q3_K_L, which is not on it) and the common ones.
MOE_PRESETS = ["Q4_K_M", "Q5_K_M", "Q3_K_M", "Q2_K", "IQ4_XS", "Q6_K", "Q8_0", "Q3_K_L", "Q4_K_S"]


def main():
    quantize, greedy_exe, stories, tiny, out = sys.argv[1:6]
    moe = [a.split("=", 1) for a in sys.argv[6:]]
    presets = ["Q4_K_M", "Q5_K_M", "Q3_K_M", "Q2_K", "IQ4_XS", "Q6_K", "Q8_0", "Q4_K_S", "Q5_K_S",
               "Q3_K_S", "Q3_K_L", "IQ4_NL", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "F16"]
    runs = []
    jobs = [(label, src, p, True) for label, src in (("stories260K.gguf", stories), ("tiny", tiny)) for p in presets]
    jobs += [(label, src, p, False) for label, src in moe for p in MOE_PRESETS]
    for label, src, p, decode in jobs:
        dst = "/tmp/quantref-%s-%s.gguf" % (os.path.basename(src), p)
        r = subprocess.run([quantize, src, dst, p], capture_output=True, text=True)
        if r.returncode != 0:
            runs.append({"model": label, "preset": p, "error": r.stderr.strip().splitlines()[-1]})
            continue
        rec = {"model": label, "preset": p, "tensors": tensors(dst),
               "file_sha256": hashlib.sha256(open(dst, "rb").read()).hexdigest()}
        if decode:
            rec.update(greedy(greedy_exe, dst, 64))
        runs.append(rec)
        os.remove(dst)
    doc = {
        "description": "llama.cpp c392e50 reference for llm quantize: llama-quantize (no imatrix) of "
        "stories260K.gguf and of the synthetic tiny model (llm mkmodel --shape tiny --type f32 --seed 1 "
        "--vocab-from stories260K.gguf), per-tensor type and SHA-256 of the tensor bytes, and greedy "
        "(argmax of raw logits) continuation of 'Once upon a time' with BOS, 64 tokens, one thread, "
        "F16 KV cache: ids, the argmax's margin over the runner-up at each step, all logits of the "
        "first generated position (4 decimals); and the types and hashes of the mixture-of-experts "
        "models in moe_f32_tensors (llm mkmodel --shape NAME --type f32 --seed 1) for some presets. "
        "file_sha256: the whole output file. Made by testdata/quantref/make_reference.py.",
        "tiny_f32_tensors": tensors(tiny),
        "moe_f32_tensors": {label: tensors(src) for label, src in moe},
        "runs": runs,
    }
    with open(out, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
        f.write("\n")


main()

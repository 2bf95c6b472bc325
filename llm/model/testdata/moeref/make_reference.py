#!/usr/bin/env python3
"""Writes ../moe-reference.json: for each mixture-of-experts model written by `llm mkmodel`
(LABEL=PATH arguments), the SHA-256 of the file and llama.cpp's greedy continuation of
"Once upon a time" (ids, each step's margin over the runner-up, all logits of the first
generated position), from cmd/llm/testdata/quantref/greedy.c. See README.md."""
import hashlib, json, subprocess, sys


def greedy(exe, model, n):
    r = subprocess.run([exe, model, str(n)], capture_output=True, text=True, check=True)
    steps = [s.split(":") for s in r.stdout.split()[1:]]
    logits = None
    for line in r.stderr.splitlines():
        f = line.split()
        if f and f[0] == "logits":
            logits = [round(float(x), 5) for x in f[1:]]
    return {"ids": [int(a) for a, _ in steps], "margins": [round(float(m), 4) for _, m in steps],
            "first_logits": logits}


def main():
    exe, out = sys.argv[1:3]
    runs = []
    for arg in sys.argv[3:]:
        label, path = arg.split("=", 1)
        rec = {"model": label, "sha256": hashlib.sha256(open(path, "rb").read()).hexdigest()}
        rec.update(greedy(exe, path, 64))
        runs.append(rec)
    doc = {
        "description": "llama.cpp c392e50 greedy (argmax of raw logits) continuation of 'Once upon "
        "a time' with BOS, 64 tokens, one thread, F16 KV cache, context 256, on the mixture-of-experts "
        "models `llm mkmodel --shape SHAPE --type TYPE --seed 1` writes (model = SHAPE-TYPE; TYPE "
        "q4_k_m: the f32 file quantized by `llm quantize ... Q4_K_M`): ids, "
        "the argmax's margin over the runner-up at each step, all logits of the first generated "
        "position (5 decimals). Made by testdata/moeref/make_reference.py.",
        "runs": runs,
    }
    with open(out, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
        f.write("\n")


main()

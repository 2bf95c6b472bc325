#!/usr/bin/env python3
"""Writes ../moe-reference.json: for each mixture-of-experts model written by `llm mkmodel`
(LABEL=PATH arguments), the SHA-256 of the file and llama.cpp's greedy continuation of
"Once upon a time" (ids, each step's margin over the runner-up, all logits of the first
generated position), from cmd/llm/testdata/quantref/greedy.c. LABEL:f32=PATH runs greedy
with an F32 KV cache (GREEDY_KV=f32) and records "kv_cache": "f32" in the run; the others use
llama.cpp's default F16 cache. With --update as the first argument the runs named replace
those of the same label in the existing file (new labels are appended), the others are kept.
See README.md."""
import hashlib, json, os, subprocess, sys


def greedy(exe, model, n, kv):
    env = dict(os.environ)
    env.pop("GREEDY_KV", None)
    if kv:
        env["GREEDY_KV"] = kv
    r = subprocess.run([exe, model, str(n)], capture_output=True, text=True, check=True, env=env)
    steps = [s.split(":") for s in r.stdout.split()[1:]]
    logits = None
    for line in r.stderr.splitlines():
        f = line.split()
        if f and f[0] == "logits":
            logits = [round(float(x), 5) for x in f[1:]]
    return {"ids": [int(a) for a, _ in steps], "margins": [round(float(m), 4) for _, m in steps],
            "first_logits": logits}


def main():
    args = sys.argv[1:]
    update = args[:1] == ["--update"]
    if update:
        args = args[1:]
    exe, out = args[:2]
    runs = []
    for arg in args[2:]:
        label, path = arg.split("=", 1)
        label, _, kv = label.partition(":")
        if kv not in ("", "f32"):
            sys.exit("%s: KV cache type %r (want f32 or none, the default F16)" % (arg, kv))
        rec = {"model": label, "sha256": hashlib.sha256(open(path, "rb").read()).hexdigest()}
        if kv:
            rec["kv_cache"] = kv
        rec.update(greedy(exe, path, 64, kv))
        runs.append(rec)
    if update:
        old = json.load(open(out))["runs"]
        new = {r["model"]: r for r in runs}
        runs = [new.pop(r["model"], r) for r in old] + [r for r in runs if r["model"] in new]
    doc = {
        "description": "llama.cpp c392e50 greedy (argmax of raw logits) continuation of 'Once upon "
        "a time' with BOS, 64 tokens, one thread, F16 KV cache (F32 where a run's kv_cache says so), "
        "context 256, on the mixture-of-experts "
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

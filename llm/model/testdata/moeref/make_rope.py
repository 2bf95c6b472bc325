#!/usr/bin/env python3
"""Writes ../rope-reference.json from the output of nodes.c: the input (ADD) and output (ROPE)
of llama.cpp's Qcur-0 node, heads 0 and 5 of every prompt position (qwen2moe-tiny: 8 heads of
32, NeoX, base 10000). Usage: make_rope.py NODES.txt OUT.json"""
import json, sys

nodes = {}
for line in open(sys.argv[1]):
    if not line.startswith("T "):
        continue
    toks = line.split()[1:]
    for i, t in enumerate(toks):
        if t.isupper() and i + 4 < len(toks) and all(x.isdigit() for x in toks[i + 1:i + 5]):
            nodes[(" ".join(toks[:i]), t)] = (toks[i + 1:i + 5], toks[i + 5:])
            break
(ne, add), (_, rope) = nodes[("Qcur-0", "ADD")], nodes[("Qcur-0", "ROPE")]
hd, heads, n = 32, 8, int(ne[1])
rows_in, rows_out = [], []
for p in range(n):
    for h in (0, 5):
        o = (p * heads + h) * hd
        rows_in.append([float(x) for x in add[o:o + hd]])
        rows_out.append([float(x) for x in rope[o:o + hd]])
json.dump({"source": "llama.cpp c392e50 (CPU, -march=native), node Qcur-0 of qwen2moe-tiny Q8_0 seed 1: "
           "heads 0 and 5 of positions 0-%d, before (ADD) and after ROPE (NeoX, base 10000, 32 dims)" % (n - 1),
           "base": 10000, "dims": hd, "neox": True, "positions": list(range(n)), "heads_per_position": 2,
           "in": rows_in, "out": rows_out}, open(sys.argv[2], "w"))
open(sys.argv[2], "a").write("\n")

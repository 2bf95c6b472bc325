#!/usr/bin/env bash
# Side-by-side LLM inference: `llm bench` (gorun) against llama.cpp's llama-bench on the same
# GGUF files and thread counts, in one run, alternating the two so that drift on a shared
# machine hits both. Each figure is the best of the repetitions (tokens/s of the fastest run:
# on a shared machine the slow runs measure the neighbours), with the mean beside it.
# Prints markdown rows with both figures and the ratios, for:
#   TP=1, 1 thread vs llama-bench -t 1 (prefill ppN and decode tgN)
#   TP=2 (two processes under gorun, 1 thread each) vs our TP=1 and vs llama-bench -t 2
#   per-rank resident memory at TP=2 vs TP=1 (of the prefill commands)
#   CPU seconds of each one-thread command, llama-bench vs llm bench (prefill and decode apart)
#
#   bench/llm/run.sh /work/peers/llama.cpp/build/bin/llama-bench [types] [pp] [tg] [reps]
#   bench/llm/run.sh ./llama-bench "q8_0 q4_0" 512 128 3
#   bench/llm/run.sh ./llama-bench "preset:Q4_K_M preset:IQ4_XS my.gguf" 512 128 3
#
# A type (q8_0, q4_k, ...) names a model of that one type from `llm mkmodel`; preset:NAME one
# quantized by `llm quantize` to llama-quantize's mix NAME (Q4_K_M, Q5_K_M, Q6_K, IQ4_XS, ...)
# from the F16 model; a path ending in .gguf is used as it is. LLM_BENCH_STORIES=0 leaves out
# stories260K.
# SIDES (default "llama1 ours1 ours2 llama2") picks the runs; LLM_BENCH_JSONL keeps the raw
# results (llama-bench's and llm bench's JSON lines) in that file; LLM_BENCH_BIN names a folder
# with prebuilt gorun and llm binaries to use instead of building them.
#
# Models: the 349M Llama shape of ../shared/ANCHORS.md with random weights, written once by
# `llm mkmodel` into $LLM_BENCH_MODELS (default ~/.cache/gorun-llm-bench), with the Llama-2
# vocabulary from ../shared/testdata/llm when present; plus stories260K (F32) when present.
set -euo pipefail

llama_bench=${1:?usage: run.sh PATH/TO/llama-bench [types] [pp] [tg] [reps]}
types=${2:-"q8_0 q4_0"}
pp=${3:-512}
tg=${4:-128}
reps=${5:-3}
llama_bench=$(realpath "$llama_bench")
root=$(cd "$(dirname "$0")/../.." && pwd)
models=${LLM_BENCH_MODELS:-$HOME/.cache/gorun-llm-bench}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$models"

if [ -n "${LLM_BENCH_BIN:-}" ]; then # prebuilt gorun and llm (a machine without Go)
	cp "$LLM_BENCH_BIN/gorun" "$LLM_BENCH_BIN/llm" "$work/"
else
	go build -o "$work/gorun" "$root/cmd/gorun"
	go build -o "$work/llm" "$root/cmd/llm"
fi
vocab=$root/../shared/testdata/llm/ggml-vocab-llama-spm.gguf
vocab_flag=()
[ -f "$vocab" ] && vocab_flag=(--vocab-from "$vocab")

files=()
for t in $types; do
	case $t in
	*.gguf) f=$t ;; # a file of the caller's
	preset:*) # llama-quantize's mix of that name, written by llm quantize from the F16 model
		p=${t#preset:}
		f=$models/llama349M-preset-${p,,}.gguf
		f16=$models/llama349M-f16.gguf
		[ -f "$f16" ] || "$work/llm" mkmodel --shape 349M --type f16 "${vocab_flag[@]}" -o "$f16"
		[ -f "$f" ] || "$work/llm" quantize --quiet "$f16" "$f" "${p^^}"
		;;
	*)
		f=$models/llama349M-$t.gguf
		[ -f "$f" ] || "$work/llm" mkmodel --shape 349M --type "$t" "${vocab_flag[@]}" -o "$f"
		;;
	esac
	files+=("$f")
done
stories=$root/../shared/testdata/llm/stories260K.gguf
[ -f "$stories" ] && [ "${LLM_BENCH_STORIES:-1}" != 0 ] && files+=("$stories")

out=$work/results.jsonl
# CPU seconds (user+sys) of each command, when GNU time is there: on a shared machine the
# wall-clock figures depend on what the neighbours do, CPU time much less. The one-thread sides
# run prefill and decode as separate commands, so each test has its own CPU figure; both
# programs do the same work per command: one warm-up (a full prefill, or one decoded token)
# and the repetitions.
timer=()
[ -x /usr/bin/time ] && timer=(/usr/bin/time -f '%U %S' -o "$work/cpu")
cpu() { # side file test
	if [ -s "$work/cpu" ]; then
		awk -v side="$1" -v file="$2" -v test="$3" '{printf "{\"side\":\"%s\",\"file\":\"%s\",\"cpu_test\":\"%s\",\"cpu_s\":%f}\n", side, file, test, $1+$2}' "$work/cpu" >>"$out"
		rm -f "$work/cpu"
	fi
}
tag() { sed "s|^{|{\"side\":\"$1\",\"file\":\"$2\",|" >>"$out"; }
for f in "${files[@]}"; do
	for side in ${SIDES:-llama1 ours1 ours2 llama2}; do
		case $side in
		llama2) "$llama_bench" -m "$f" -t 2 -p "$pp" -n "$tg" -r "$reps" -o jsonl 2>/dev/null | tag "$side" "$f" ;;
		*)
			for t in "pp$pp" "tg$tg"; do
				p=0 n=0
				if [ "${t:0:2}" = pp ]; then p=$pp; else n=$tg; fi
				case $side in
				llama1) "${timer[@]}" "$llama_bench" -m "$f" -t 1 -p "$p" -n "$n" -r "$reps" -o jsonl 2>/dev/null | tag "$side" "$f" ;;
				ours1) "${timer[@]}" "$work/llm" bench -m "$f" -t 1 -p "$p" -n "$n" -r "$reps" -o jsonl | tag "$side" "$f" ;;
				ours2) "$work/gorun" -n 2 "$work/llm" bench -m "$f" -t 1 -p "$p" -n "$n" -r "$reps" -o jsonl | tag "$side" "$f" ;;
				esac
				cpu "$side" "$f" "$t"
			done
			;;
		esac
	done
done

[ -n "${LLM_BENCH_JSONL:-}" ] && cp "$out" "$LLM_BENCH_JSONL"
python3 - "$out" <<'PY'
import json, sys, os, datetime
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
cpus = {(r["file"], r["side"], r["cpu_test"]): r["cpu_s"] for r in rows if "cpu_s" in r}
rows = [r for r in rows if "cpu_s" not in r]
def key(r):
    if r["side"].startswith("llama"):
        t = "pp%d" % r["n_prompt"] if r["n_prompt"] else "tg%d" % r["n_gen"]
        return r["file"], r["side"], t
    return r["file"], r["side"], r["test"]
by = {key(r): r for r in rows}
def tps(f, side, t):
    r = by.get((f, side, t))
    if r is None: return None
    return max(r["samples_ts"] if side.startswith("llama") else r["samples"])
def mean(f, side, t):
    r = by.get((f, side, t))
    if r is None: return None
    return r["avg_ts"] if side.startswith("llama") else r["tokens_per_s"]
files = sorted({r["file"] for r in rows}, key=lambda f: [r["file"] for r in rows].index(f))
tests = sorted({k[2] for k in by}, key=lambda t: (t[:2] != "pp", t))
print("date %s, %d cores, load %s" % (datetime.date.today(), os.cpu_count(), open("/proc/loadavg").read().split()[0]))
print()
print("best of the repetitions, tokens/s (mean in parentheses)")
print()
print("| model | test | llama.cpp -t 1 | gorun TP=1 -t 1 | ratio | gorun TP=2 (2 procs) | TP=2/TP=1 | llama.cpp -t 2 |")
print("|---|---|---:|---:|---:|---:|---:|---:|")
for f in files:
    for t in tests:
        l1, o1, o2, l2 = (tps(f, s, t) for s in ("llama1", "ours1", "ours2", "llama2"))
        if l1 is None and o1 is None: continue
        fmt0 = lambda v: "-" if v is None else "%.2f" % v
        fmt = lambda v, s=None: fmt0(v)
        rat = lambda a, b: "-" if a is None or b is None or b == 0 else "%.2fx" % (a / b)
        ms = {s: mean(f, s, t) for s in ("llama1", "ours1", "ours2", "llama2")}
        both = lambda v, s: "-" if v is None else "%.2f (%.2f)" % (v, ms[s])
        print("| %s | %s | %s | %s | %s | %s | %s | %s |" % (os.path.basename(f), t, both(l1, "llama1"), both(o1, "ours1"), rat(o1, l1), both(o2, "ours2"), rat(o2, o1), both(l2, "llama2")))
if cpus:
    print()
    print("CPU seconds of each command (user+sys; same test, warm-up and repetitions on both sides)")
    print()
    print("| model | test | llama-bench -t 1 | llm bench TP=1 | llama.cpp CPU / ours |")
    print("|---|---|---:|---:|---:|")
    for f in files:
        for t in tests:
            a, b = cpus.get((f, "llama1", t)), cpus.get((f, "ours1", t))
            if a and b:
                print("| %s | %s | %.2f | %.2f | %.2fx |" % (os.path.basename(f), t, a, b, a / b))
print()
print("| model | rank RSS TP=1 (MiB) | rank RSS TP=2 (MiB) | TP=2/TP=1 |")
print("|---|---:|---:|---:|")
for f in files:
    # the prefill commands (the same batch and KV cache at both degrees)
    r1 = next((r for r in rows if r["file"] == f and r["side"] == "ours1" and r["test"][:2] == "pp"), None)
    r2 = next((r for r in rows if r["file"] == f and r["side"] == "ours2" and r["test"][:2] == "pp"), None)
    if r1 and r2:
        a, b = r1["rank_rss_mib"][0], max(r2["rank_rss_mib"])
        print("| %s | %.1f | %s | %.2fx |" % (os.path.basename(f), a, " / ".join("%.1f" % x for x in r2["rank_rss_mib"]), b / a))
PY

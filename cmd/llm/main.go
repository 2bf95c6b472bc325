// Command llm runs GGUF models (Llama-family and mixtures of experts), tensor- and
// expert-parallel across gorun ranks:
//
//	llm generate -m model.gguf -p "Once upon a time" -n 64      # one rank
//	gorun -n 2 llm generate -m model.gguf -p "Once upon a time"  # two ranks share the weights
//	gorun -n 2 llm bench -m model.gguf -p 512 -n 128             # prefill/decode tokens/s
//	gorun -n 4 llm generate -m model.gguf --pp 2                 # 2 pipeline stages of TP=2
//	llm mkmodel --shape 349M --type q8_0 -o m.gguf               # random-weight benchmark model
//	llm info -m model.gguf                                       # metadata, TP degrees that work
//	llm quantize model-f32.gguf model-q4_k_m.gguf Q4_K_M         # llama-quantize's mixes
//	llm split --split-max-size 2G model.gguf model                # model-00001-of-0000N.gguf ...
//	llm plan -m model.gguf --hostfile hosts --mem 64G             # memory per rank, TP vs PP
//	gorun -n 4 llm stage -m model.gguf --to /data/stage           # each host gets its shards
//
// Packages llm/model, llm/tp, llm/pipeline, llm/sample and llm/tokenizer hold the logic.
package main

import (
	"fmt"
	"io"
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `usage: llm COMMAND [flags]

commands:
  generate   generate text from a prompt (streams to stdout on rank 0)
  bench      prefill (pp) and decode (tg) tokens/s, llama-bench style, and per-rank memory
  mkmodel    write a random-weight model of a realistic shape
  info       print a model's metadata, tensors and the tensor-parallel degrees that work
  quantize   convert a model to one of llama-quantize's presets (Q4_K_M, Q8_0, IQ4_XS, ...)
  plan       each rank's memory (weights, KV cache, work-space) and link traffic for TP and PP layouts
  stage      copy to every host of the job the bytes its ranks read, for generate/serve -m DIR
  split      write a model as llama.cpp's split parts (-00001-of-0000N.gguf), or merge them
  serve      OpenAI-compatible HTTP server (chat and text completions, streaming) on rank 0
  bench-serve  load a running server with 1, 4, 16 concurrent clients: throughput, TTFT

Run under "gorun -n N" to split the model over N ranks (tensor parallel; with --pp S, S
pipeline stages of layers, each tensor parallel over N/S ranks). "llm COMMAND -h" lists the flags.
`

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "generate":
		err = generate(args[1:], stdout, stderr)
	case "bench":
		err = bench(args[1:], stdout, stderr)
	case "mkmodel":
		err = mkmodel(args[1:], stdout, stderr)
	case "info":
		err = info(args[1:], stdout, stderr)
	case "quantize":
		err = quantizeCmd(args[1:], stdout, stderr)
	case "plan":
		err = planCmd(args[1:], stdout, stderr)
	case "stage":
		err = stageCmd(args[1:], stdout, stderr)
	case "split":
		err = splitCmd(args[1:], stdout, stderr)
	case "serve":
		err = serveCmd(args[1:], stdout, stderr)
	case "bench-serve":
		err = benchServe(args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "llm: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	if err != nil {
		if err == errUsage {
			return 2
		}
		fmt.Fprintf(stderr, "llm %s: %v\n", args[0], err)
		return 1
	}
	return 0
}

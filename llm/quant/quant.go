// Package quant holds the tensor element types of GGUF models: dequantization, reference
// quantizers and the dot products of matrix-vector products, with llama.cpp's block layouts
// (ggml-common.h). Each type lives in its own file and registers itself (registry.go). As in
// llama.cpp, the activation side of a dot product is converted to the weight type's "vector dot
// type" first (ggml's vec_dot_type): Q8_0 blocks for Q8_0, Q4_0, Q5_0 and IQ4_NL weights, Q8_1
// for Q4_1 and Q5_1, Q8_K for the K-quants and IQ4_XS, F16 for F16, BF16 for BF16 and plain
// float32 for F32.
package quant

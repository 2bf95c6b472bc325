// refgen writes the reference vectors of llm/quant's tests with ggml's own code: for each
// quantized type, ggml's quantizer without importance matrix (ggml_quantize_chunk, what
// llama-quantize writes: quantize_row_*_ref for all but IQ4_NL, which tries 15 scales there)
// and dequantizer (dequantize_row_*) applied to a fixed pseudo-random input, the
// dequantization of random blocks, and the CPU backend's dot product of both rows with a
// fixed activation vector. See README.md for how to build it against llama.cpp.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#include "ggml.h"
#include "ggml-cpu.h"

// ggml-quants.h declares these with block types from an internal header; the ABI is a pointer.
#define DECL(t) \
    void dequantize_row_##t(const void *x, float *y, int64_t k);
DECL(q4_0) DECL(q4_1) DECL(q5_0) DECL(q5_1) DECL(q8_0) DECL(iq4_nl)
DECL(q2_K) DECL(q3_K) DECL(q4_K) DECL(q5_K) DECL(q6_K) DECL(iq4_xs)

typedef void (*dequant_fn)(const void *, float *, int64_t);

struct kind {
    const char *name;
    enum ggml_type type;
    dequant_fn dequant;
    int f16[2]; // offsets of the block's f16 scales (-1: none)
};

#define K(n, T, t, a, b) {n, GGML_TYPE_##T, dequantize_row_##t, {a, b}}
static const struct kind kinds[] = {
    K("Q4_0", Q4_0, q4_0, 0, -1), K("Q4_1", Q4_1, q4_1, 0, 2), K("Q5_0", Q5_0, q5_0, 0, -1),
    K("Q5_1", Q5_1, q5_1, 0, 2), K("Q8_0", Q8_0, q8_0, 0, -1), K("IQ4_NL", IQ4_NL, iq4_nl, 0, -1),
    K("Q2_K", Q2_K, q2_K, 80, 82), K("Q3_K", Q3_K, q3_K, 108, -1), K("Q4_K", Q4_K, q4_K, 0, 2),
    K("Q5_K", Q5_K, q5_K, 0, 2), K("Q6_K", Q6_K, q6_K, 208, -1), K("IQ4_XS", IQ4_XS, iq4_xs, 0, -1),
};

enum { N = 1024 };

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint32_t next(void) { // xorshift64*
    rng ^= rng >> 12; rng ^= rng << 25; rng ^= rng >> 27;
    return (uint32_t)((rng * 0x2545F4914F6CDD1Dull) >> 32);
}
static float uniform(void) { return (next() + 0.5f) / 4294967296.0f; }
static float gauss(void) { return sqrtf(-2 * logf(uniform())) * cosf(6.2831853f * uniform()); }

// input fills x with blocks of 32 of varying scale: Gaussian, all positive, constant, one
// large outlier, tiny values.
static void input(float *x) {
    for (int b = 0; b < N / 32; b++) {
        float s = 0.01f + 2 * uniform();
        for (int j = 0; j < 32; j++) {
            float v = gauss() * s;
            switch (b % 8) {
            case 3: v = fabsf(v) + 0.5f; break;
            case 5: v = 0.75f; break;
            case 6: if (j == 7) v = 40; break;
            case 7: v *= 1e-4f; break;
            }
            x[32 * b + j] = v;
        }
    }
}

static void put(FILE *f, const void *p, size_t n) {
    if (fwrite(p, 1, n, f) != n) { perror("write"); exit(1); }
}

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: refgen OUTDIR\n"); return 2; }
    ggml_cpu_init();
    static float x[N], act[N], y[N];
    static uint8_t q[N * 2], r[N * 2], a[N * 2];
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        const struct kind *k = &kinds[i];
        size_t rb = ggml_row_size(k->type, N), bs = ggml_type_size(k->type);
        input(x);
        for (int j = 0; j < N; j++) act[j] = gauss();
        for (size_t j = 0; j < rb; j++) r[j] = next() & 0xff;
        for (size_t o = 0; o < rb; o += bs)
            for (int s = 0; s < 2; s++)
                if (k->f16[s] >= 0) {
                    ggml_fp16_t h = ggml_fp32_to_fp16((uniform() - 0.3f) * 0.05f);
                    memcpy(r + o + k->f16[s], &h, 2);
                }
        char path[4096];
        snprintf(path, sizeof path, "%s/%s.bin", argv[1], k->name);
        FILE *f = fopen(path, "wb");
        if (!f) { perror(path); return 1; }
        uint32_t n = N;
        put(f, &n, 4);
        put(f, x, sizeof x);
        ggml_quantize_chunk(k->type, x, q, 0, 1, N, NULL);
        put(f, q, rb);
        k->dequant(q, y, N);
        put(f, y, sizeof y);
        put(f, r, rb);
        k->dequant(r, y, N);
        put(f, y, sizeof y);
        put(f, act, sizeof act);
        const struct ggml_type_traits_cpu *t = ggml_get_type_traits_cpu(k->type);
        const struct ggml_type_traits_cpu *vt = ggml_get_type_traits_cpu(t->vec_dot_type);
        vt->from_float(act, a, N);
        float d[2];
        t->vec_dot(N, &d[0], 0, q, 0, a, 0, 1);
        t->vec_dot(N, &d[1], 0, r, 0, a, 0, 1);
        put(f, d, sizeof d);
        uint32_t vdt = t->vec_dot_type;
        put(f, &vdt, 4);
        if (fclose(f)) { perror(path); return 1; }
    }
    return 0;
}

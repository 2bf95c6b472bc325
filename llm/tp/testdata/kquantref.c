// kquantref prints llama.cpp's greedy decoding of a model from given prompt token ids, as JSON:
// the argmax token of each step, its margin over the runner-up, and every logit of the first
// two steps (the prompt's last position, then the first generated token's). One thread, F16
// KV cache (llama.cpp's defaults otherwise), no sampling: the raw logits.
//
// Built against llama.cpp (c392e50), outside the repository:
//   cc -O2 -o kquantref kquantref.c -I$LLAMA/include -I$LLAMA/ggml/include \
//     $LLAMA/build/src/libllama.a $LLAMA/build/ggml/src/libggml.a \
//     $LLAMA/build/ggml/src/libggml-cpu.a $LLAMA/build/ggml/src/libggml-base.a \
//     -lstdc++ -lm -lgomp -lpthread
// Usage: kquantref MODEL STEPS ID...
#include <stdio.h>
#include <stdlib.h>
#include "llama.h"

static void logits(const float *l, int nv) {
    printf("[");
    for (int i = 0; i < nv; i++) printf(i ? ",%.6g" : "%.6g", l[i]);
    printf("]");
}

int main(int argc, char **argv) {
    if (argc < 4) { fprintf(stderr, "usage: kquantref MODEL STEPS ID...\n"); return 2; }
    int steps = atoi(argv[2]), nt = argc - 3;
    if (steps < 2 || nt > 64) { fprintf(stderr, "kquantref: STEPS >= 2, at most 64 ids\n"); return 2; }
    llama_backend_init();
    llama_log_set(NULL, NULL);
    struct llama_model *model = llama_model_load_from_file(argv[1], llama_model_default_params());
    if (!model) { fprintf(stderr, "kquantref: cannot load %s\n", argv[1]); return 1; }
    int nv = llama_vocab_n_tokens(llama_model_get_vocab(model));
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 256; cp.n_batch = 256; cp.n_threads = 1; cp.n_threads_batch = 1;
    struct llama_context *ctx = llama_init_from_model(model, cp);
    llama_token toks[64], t;
    for (int i = 0; i < nt; i++) toks[i] = atoi(argv[3 + i]);
    struct llama_batch b = llama_batch_get_one(toks, nt);
    int ids[512];
    float margins[512];
    if (steps > 512) steps = 512;
    printf("{\"logits\":[");
    for (int s = 0; s < steps; s++) {
        if (llama_decode(ctx, b)) { fprintf(stderr, "kquantref: decode failed at step %d\n", s); return 1; }
        const float *l = llama_get_logits_ith(ctx, -1);
        int best = 0, second = -1;
        for (int i = 1; i < nv; i++) if (l[i] > l[best]) best = i;
        for (int i = 0; i < nv; i++) if (i != best && (second < 0 || l[i] > l[second])) second = i;
        if (s < 2) { if (s) printf(","); logits(l, nv); }
        ids[s] = best;
        margins[s] = l[best] - l[second];
        t = best;
        b = llama_batch_get_one(&t, 1);
    }
    printf("],\"tokens\":[");
    for (int s = 0; s < steps; s++) printf(s ? ",%d" : "%d", ids[s]);
    printf("],\"margins\":[");
    for (int s = 0; s < steps; s++) printf(s ? ",%.6g" : "%.6g", margins[s]);
    printf("]}\n");
    return 0;
}

// greedy prints llama.cpp's greedy continuation of a prompt for one model: on stdout "ids"
// and, per step, the argmax id and its margin over the runner-up ("id:margin"); on stderr a
// line "logits ..." with every logit of the first generated position and "logits1 ..." for
// the second. One thread, context 256, F16 KV cache (llama.cpp's default) unless the
// environment sets GREEDY_KV=f32 (keys and values cached in F32).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "llama.h"

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: greedy MODEL N [PROMPT]\n"); return 2; }
    const char *prompt = argc > 3 ? argv[3] : "Once upon a time";
    int n = atoi(argv[2]);
    llama_backend_init();
    llama_log_set(NULL, NULL);
    struct llama_model_params mp = llama_model_default_params();
    struct llama_model *model = llama_model_load_from_file(argv[1], mp);
    if (!model) return 1;
    const struct llama_vocab *vocab = llama_model_get_vocab(model);
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 256; cp.n_batch = 256; cp.n_threads = 1; cp.n_threads_batch = 1;
    const char *kv = getenv("GREEDY_KV");
    if (kv && strcmp(kv, "f32") == 0) { cp.type_k = GGML_TYPE_F32; cp.type_v = GGML_TYPE_F32; }
    else if (kv && *kv && strcmp(kv, "f16") != 0) { fprintf(stderr, "GREEDY_KV=%s: want f16 or f32\n", kv); return 2; }
    struct llama_context *ctx = llama_init_from_model(model, cp);
    llama_token toks[256];
    int nt = llama_tokenize(vocab, prompt, strlen(prompt), toks, 256, true, true);
    int nv = llama_vocab_n_tokens(vocab);
    struct llama_batch b = llama_batch_get_one(toks, nt);
    printf("ids");
    for (int s = 0; s < n; s++) {
        if (llama_decode(ctx, b)) return 1;
        float *l = llama_get_logits_ith(ctx, -1);
        int best = 0, second = -1;
        for (int i = 1; i < nv; i++) if (l[i] > l[best]) best = i;
        for (int i = 0; i < nv; i++) if (i != best && (second < 0 || l[i] > l[second])) second = i;
        if (s <= 1) { fprintf(stderr, s ? "logits1" : "logits"); for (int i = 0; i < nv; i++) fprintf(stderr, " %.6f", l[i]); fprintf(stderr, "\n"); }
        printf(" %d:%.4f", best, l[best] - l[second]);
        static llama_token t; t = best;
        b = llama_batch_get_one(&t, 1);
    }
    printf("\n");
    return 0;
}

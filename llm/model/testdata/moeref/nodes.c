// nodes prints llama.cpp's intermediate tensors for the prompt "Once upon a time": every F32 or
// F16 node of the graph as "T NAME OP NE0 NE1 NE2 NE3 values..." (ggml's cb_eval callback),
// then "LOGITS ..." of the last token. Usage: nodes MODEL OUT. One thread, F16 KV cache,
// context 256, as greedy.c in cmd/llm/testdata/quantref.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "llama.h"
#include "ggml.h"
#include "ggml-backend.h"
static FILE *out;
static bool cb(struct ggml_tensor *t, bool ask, void *ud) {
    if (ask) return true;
    if (t->type != GGML_TYPE_F32 && t->type != GGML_TYPE_F16) return true;
    if (!ggml_is_contiguous(t)) return true;
    fprintf(out, "T %s %s %lld %lld %lld %lld", t->name, ggml_op_desc(t), (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2], (long long)t->ne[3]);
    size_t n = ggml_nelements(t);
    for (size_t i = 0; i < n; i++) {
        float v = t->type == GGML_TYPE_F32 ? ((float *)t->data)[i] : ggml_fp16_to_fp32(((ggml_fp16_t *)t->data)[i]);
        fprintf(out, " %.9g", v);
    }
    fprintf(out, "\n");
    return true;
}
int main(int argc, char **argv) {
    const char *prompt = "Once upon a time";
    out = fopen(argv[2], "w");
    llama_backend_init();
    llama_log_set(NULL, NULL);
    struct llama_model_params mp = llama_model_default_params();
    struct llama_model *model = llama_model_load_from_file(argv[1], mp);
    const struct llama_vocab *vocab = llama_model_get_vocab(model);
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 256; cp.n_batch = 256; cp.n_threads = 1; cp.n_threads_batch = 1;
    cp.cb_eval = cb; cp.cb_eval_user_data = NULL;
    struct llama_context *ctx = llama_init_from_model(model, cp);
    llama_token toks[256];
    int nt = llama_tokenize(vocab, prompt, strlen(prompt), toks, 256, true, true);
    fprintf(out, "TOKS"); for (int i = 0; i < nt; i++) fprintf(out, " %d", toks[i]); fprintf(out, "\n");
    struct llama_batch b = llama_batch_get_one(toks, nt);
    if (llama_decode(ctx, b)) return 1;
    float *l = llama_get_logits_ith(ctx, -1);
    fprintf(out, "LOGITS"); for (int i = 0; i < llama_vocab_n_tokens(vocab); i++) fprintf(out, " %.9g", l[i]); fprintf(out, "\n");
    fclose(out);
    return 0;
}

// llamacpp-tokenize: a small driver over llama.cpp's C API (llama.h), used to cross-check and
// benchmark this package against llama.cpp. It is not part of the Go build. Build it against a
// CPU-only llama.cpp build tree, outside the repository, e.g.:
//
//   L=/path/to/llama.cpp
//   g++ -O2 -std=c++17 -fopenmp llamacpp-tokenize.cpp -I$L/include -I$L/ggml/include \
//       $L/build/src/libllama.a $L/build/ggml/src/libggml.a $L/build/ggml/src/libggml-cpu.a \
//       $L/build/ggml/src/libggml-base.a -lpthread -o llamacpp-tokenize
//
// Usage:
//   llamacpp-tokenize ids   VOCAB.gguf FILE ADD_SPECIAL PARSE_SPECIAL
//       FILE holds strings separated by "\n__ggml_vocab_test__\n" (llama.cpp's .inp format);
//       prints one line of token ids per string.
//   llamacpp-tokenize bench VOCAB.gguf FILE REPS
//       tokenizes the whole file REPS times; prints "tokens <n> seconds_per_rep <s>".
#include "llama.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

static void quiet(ggml_log_level, const char *, void *) {}

static std::vector<llama_token> tokenize(const llama_vocab * vocab, const std::string & text, bool add, bool parse) {
    std::vector<llama_token> ids(text.size() + 8);
    int n = llama_tokenize(vocab, text.data(), (int32_t) text.size(), ids.data(), (int32_t) ids.size(), add, parse);
    if (n < 0) {
        ids.resize(-n);
        n = llama_tokenize(vocab, text.data(), (int32_t) text.size(), ids.data(), (int32_t) ids.size(), add, parse);
    }
    ids.resize(n < 0 ? 0 : n);
    return ids;
}

int main(int argc, char ** argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: %s ids|bench VOCAB.gguf FILE ...\n", argv[0]);
        return 2;
    }
    std::string mode = argv[1];
    llama_log_set(quiet, nullptr);
    llama_backend_init();
    llama_model_params mp = llama_model_default_params();
    mp.vocab_only = true;
    llama_model * model = llama_model_load_from_file(argv[2], mp);
    if (!model) {
        fprintf(stderr, "cannot load %s\n", argv[2]);
        return 1;
    }
    const llama_vocab * vocab = llama_model_get_vocab(model);
    std::ifstream f(argv[3], std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    std::string data = ss.str();
    if (mode == "ids" && argc >= 6) {
        bool add = atoi(argv[4]) != 0, parse = atoi(argv[5]) != 0;
        const std::string sep = "\n__ggml_vocab_test__\n";
        size_t pos = 0;
        while (pos < data.size()) {
            size_t end = data.find(sep, pos);
            if (end == std::string::npos) end = data.size();
            for (llama_token id : tokenize(vocab, data.substr(pos, end - pos), add, parse)) printf(" %d", id);
            printf("\n");
            pos = end + sep.size();
        }
    } else if (mode == "bench") {
        int reps = atoi(argv[4]);
        size_t n = tokenize(vocab, data, false, false).size();
        auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < reps; i++) n = tokenize(vocab, data, false, false).size();
        double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / reps;
        printf("tokens %zu seconds_per_rep %.9f\n", n, s);
    } else {
        fprintf(stderr, "bad mode %s\n", mode.c_str());
        return 2;
    }
    llama_model_free(model);
    return 0;
}

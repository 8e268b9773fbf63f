/*
 * presets.c - --model NAME: the shapes of real decoder families (hidden size, attention and KV
 * heads, head size, MLP size, vocabulary) from their published configuration files, so that a
 * workload of a few layers has the activations, weights and KV cache of the real model per layer.
 * The number of layers stays wsk's (--layers, default 2): the real depth is given for reference.
 */
#include <stdio.h>
#include <string.h>

#include "wsk.h"

static const struct wsk_preset presets[] = {
    {"llama2-7b", "meta-llama/Llama-2-7b-hf config.json", 4096, 32, 32, 128, 11008, 32000, 32},
    {"mistral-7b", "mistralai/Mistral-7B-v0.1 config.json", 4096, 32, 8, 128, 14336, 32000, 32},
    {"llama3-8b", "meta-llama/Meta-Llama-3-8B config.json", 4096, 32, 8, 128, 14336, 128256, 32},
    {"tinyllama-1.1b", "TinyLlama/TinyLlama-1.1B-intermediate-step-1431k-3T config.json", 2048, 32, 4, 64, 5632, 32000,
     22},
    {"qwen2.5-0.5b", "Qwen/Qwen2.5-0.5B config.json", 896, 14, 2, 64, 4864, 151936, 24},
    {"smollm2-135m", "HuggingFaceTB/SmolLM2-135M config.json", 576, 9, 3, 64, 1536, 49152, 30},
};

const struct wsk_preset *wsk_preset_find(const char *name)
{
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
        if (strcmp(presets[i].name, name) == 0)
            return &presets[i];
    return NULL;
}

const char *wsk_preset_names(void)
{
    static char names[256];
    if (!names[0])
        for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "", presets[i].name);
    return names;
}

static void set_unless_given(uint32_t *field, uint32_t value, uint32_t given, uint32_t bit)
{
    if (!(given & bit))
        *field = value;
}

void wsk_preset_apply(const struct wsk_preset *p, struct wsk_config *c)
{
    set_unless_given(&c->hidden, p->hidden, c->given, WSK_GIVEN_HIDDEN);
    set_unless_given(&c->heads, p->heads, c->given, WSK_GIVEN_HEADS);
    set_unless_given(&c->head_dim, p->head_dim, c->given, WSK_GIVEN_HEAD_DIM);
    set_unless_given(&c->intermediate, p->intermediate, c->given, WSK_GIVEN_INTERMEDIATE);
    set_unless_given(&c->vocab, p->vocab, c->given, WSK_GIVEN_VOCAB);
    if (!c->kv_heads_set) {
        c->kv_heads = p->kv_heads;
        c->kv_heads_set = true;
    }
}

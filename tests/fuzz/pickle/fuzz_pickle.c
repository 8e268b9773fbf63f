/*
 * Fuzz harness: the PyTorch snapshot importer on arbitrary bytes.  The pickle reader must
 * refuse or parse every input without crashing, reading out of bounds or executing anything;
 * what it parses goes through the whole snapshot-to-trace mapping.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "import.h"

/* Visit every value (bounded depth: a memo reference can make a list contain itself). */
static size_t walk(const struct ws_pv *v, int depth)
{
    size_t n = 1;
    if (!v || depth > 64)
        return 0;
    size_t items = v->kind == WS_PV_DICT ? 2 * v->len : (v->kind == WS_PV_LIST || v->kind == WS_PV_TUPLE) ? v->len : 0;
    for (size_t i = 0; i < items && n < 100000; i++)
        n += walk(v->items[i], depth + 1);
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ws_pickle *p = NULL;
    const struct ws_pv *root = NULL;
    char err[1024];
    if (ws_pickle_parse(data, size, &p, &root, err, sizeof err) == 0) {
        (void)walk(root, 0);
        ws_pickle_free(p);
        char in[64], out[64];
        snprintf(in, sizeof in, "/tmp/wsfuzz_pickle_%ld.pickle", (long)getpid());
        snprintf(out, sizeof out, "/tmp/wsfuzz_pickle_%ld.db", (long)getpid());
        FILE *f = fopen(in, "wb");
        if (f) {
            fwrite(data, 1, size, f);
            fclose(f);
            struct ws_import_stats st;
            (void)ws_import_torch_snapshot(in, out, WS_NODE_FRAME, &st, err, sizeof err);
            unlink(in);
            unlink(out);
        }
    }
    return 0;
}

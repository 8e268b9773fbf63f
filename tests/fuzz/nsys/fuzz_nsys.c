/*
 * Fuzz harness: the Nsight Systems importer on arbitrary database files.  Inputs are SQLite
 * files (the seed corpus holds exports of both documented layouts and hostile variants);
 * mutated ones exercise the checks on tables, columns, enums, ids and orders.
 */
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "import.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char in[64], out[64], err[1024];
    snprintf(in, sizeof in, "/tmp/wsfuzz_nsys_%ld.sqlite", (long)getpid());
    snprintf(out, sizeof out, "/tmp/wsfuzz_nsys_%ld.db", (long)getpid());
    FILE *f = fopen(in, "wb");
    if (!f)
        return 0;
    fwrite(data, 1, size, f);
    fclose(f);
    struct ws_import_stats st;
    (void)ws_import_nsys(in, out, &st, err, sizeof err);
    unlink(in);
    unlink(out);
    return 0;
}

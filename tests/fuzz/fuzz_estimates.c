/* Fuzzing the Level-1 estimates files (JSON or CSV, docs/analysis.md) through their public
 * reader, ws_estimates_load (analyzer/analysis.h). */
#include <stddef.h>
#include <stdint.h>

#include "analysis.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[600], err[1024];
    fuzz_write(path, sizeof path, "estimates", data, size);
    struct ws_estimates est;
    if (ws_estimates_load(path, &est, err, sizeof err) == 0)
        ws_estimates_free(&est);
    return 0;
}

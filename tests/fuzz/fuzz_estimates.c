/* Fuzzing the Level-1 estimates files (JSON or CSV, docs/analysis.md) through their public
 * parser, ws_estimates_parse (analyzer/analysis/estimates.h): a buffer in, rows or one error line
 * out. */
#include <stddef.h>
#include <stdint.h>

#include "estimates.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[1024];
    struct ws_estimates est;
    if (ws_estimates_parse((const char *)data, size, "fuzz", &est, err, sizeof err) == 0)
        ws_estimates_free(&est);
    return 0;
}

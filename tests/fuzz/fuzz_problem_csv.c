/* Fuzzing the CSV planning problems (id,lower,upper,size[,alignment]) through their public
 * reader, ws_problem_read (analyzer/planner/planner.h), and the writer of what it accepted. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "fuzz_util.h"
#include "planner.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[600], out[600], err[1024];
    fuzz_write(path, sizeof path, "problem.csv", data, size);
    struct ws_problem pr;
    if (ws_problem_read(path, &pr, err, sizeof err) == 0) {
        fuzz_path(out, sizeof out, "solution.csv");
        FILE *f = fopen(out, "w");
        if (f) {
            ws_problem_write(f, &pr);
            fclose(f);
        }
        ws_problem_free(&pr);
    }
    return 0;
}

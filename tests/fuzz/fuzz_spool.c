/* Fuzzing the collector (collector/) as a whole: a spool, in the compact form of spool_input.h,
 * turned into a trace by ws_collect_spool.  fuzz_spool_reader.c fuzzes the reader alone, faster. */
#include <stddef.h>
#include <stdint.h>

#include "collector.h"
#include "spool_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char spool[600], db[600], err[1024];
    if (spool_from_input(data, size, "input.spool", spool, sizeof spool) != 0)
        return 0;
    fuzz_path(db, sizeof db, "input.db");
    struct ws_collect_stats st;
    ws_collect_spool(spool, db, &st, err, sizeof err);
    unlink(db);
    return 0;
}

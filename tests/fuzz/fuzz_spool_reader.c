/* Fuzzing the spool reader (collector/spool_reader.c) alone: every record of a spool in merge
 * order, its string, and the search for records of equal time that the collector's pairing uses.
 * Inputs in the compact form of spool_input.h (the corpus of fuzz_spool). */
#include <stddef.h>
#include <stdint.h>

#include "spool_input.h"
#include "spool_reader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char spool[600], err[1024];
    if (spool_from_input(data, size, "reader.spool", spool, sizeof spool) != 0)
        return 0;
    struct ws_spool s;
    if (ws_spool_open(spool, &s, err, sizeof err) != 0)
        return 0;
    size_t thread, other, bytes = 0;
    const struct ws_rec *r;
    while ((r = ws_spool_next(&s, &thread)) != NULL) {
        size_t len;
        const char *text = ws_rec_text(r, &len);
        for (size_t i = 0; i < len; i++)
            bytes += (unsigned char)text[i]; /* every byte of the string is read */
        if ((r->type == WS_REC_ALLOC || r->type == WS_REC_FREE) &&
            ws_spool_find_tied(&s, thread, r->ns, r->type == WS_REC_ALLOC ? WS_REC_FREE : WS_REC_ALLOC, r->u[0],
                               &other) &&
            (r = ws_spool_next_of(&s, other)) != NULL)
            bytes += r->type;
    }
    ws_spool_close(&s);
    return bytes == (size_t)-1; /* keeps the reads */
}

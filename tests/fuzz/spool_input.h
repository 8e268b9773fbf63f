/*
 * The compact form of a spool that the spool harnesses take (fuzz_spool.c, fuzz_spool_reader.c).
 * A spool is at least one 4 KiB header and one 256 KiB chunk, too large to mutate byte by byte, so
 * an input describes one:
 *
 *   byte 0      flags: 1 = repair the header's magic, version, sizes and chunk count (so that
 *               mutations reach the records); 2 = mark it cleanly ended; 4 = full-size chunks
 *               (otherwise the file ends right after the last chunk's bytes, as a spool cut short)
 *   byte 1      chunks: 1 + byte % 8
 *   next 1184   the start of the header (magic ... tool_version)
 *   the rest    split evenly between the chunks, each part at the start of its chunk
 *
 * tests/fuzz/seeds.py writes the seed corpus in this form.
 */
#ifndef WS_FUZZ_SPOOL_INPUT_H
#define WS_FUZZ_SPOOL_INPUT_H

#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include "fuzz_util.h"
#include "spool_format.h"

#define HEADER_PART 1184u

/* Write the spool an input describes to the file name; its path goes to spool.  0, or -1 when
 * the input is too short to describe one. */
static inline int spool_from_input(const uint8_t *data, size_t size, const char *name, char *spool, size_t len)
{
    if (size < 2)
        return -1;
    unsigned flags = data[0], chunks = 1u + data[1] % 8u;
    data += 2, size -= 2;
    struct ws_spool_header h;
    memset(&h, 0, sizeof h);
    size_t hlen = size < HEADER_PART ? size : HEADER_PART;
    memcpy(&h, data, hlen);
    data += hlen, size -= hlen;
    if (flags & 1) {
        memcpy(h.magic, WS_SPOOL_MAGIC, 8);
        h.version = WS_SPOOL_VERSION;
        h.header_bytes = WS_SPOOL_HEADER_BYTES;
        h.chunk_bytes = WS_CHUNK_BYTES;
        h.rec_bytes = WS_REC_BYTES;
        h.next_chunk = chunks;
    }
    if (flags & 2)
        h.end_ns = h.start_ns + 1;
    h.start_ticks = 0; /* a pid in the input must not make the spool look in use */
    fuzz_path(spool, len, name);
    int fd = open(spool, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || pwrite(fd, &h, sizeof h, 0) != (ssize_t)sizeof h) {
        perror("fuzz: spool");
        abort();
    }
    size_t part = size / chunks, end = WS_SPOOL_HEADER_BYTES;
    for (unsigned i = 0; i < chunks; i++) {
        size_t n = i + 1 == chunks ? size - part * i : part;
        off_t off = (off_t)WS_SPOOL_HEADER_BYTES + (off_t)i * WS_CHUNK_BYTES;
        if (n && pwrite(fd, data + part * i, n, off) != (ssize_t)n) {
            perror("fuzz: spool");
            abort();
        }
        end = (size_t)off + ((flags & 4) ? WS_CHUNK_BYTES : n);
    }
    if (ftruncate(fd, (off_t)end) != 0 || close(fd) != 0) {
        perror("fuzz: spool");
        abort();
    }
    return 0;
}

#endif

/*
 * The analysis engine, part 2: estimates files (docs/analysis.md, "Estimates files").
 *
 * A file holds per node Level-1 workspace figures by slot and the facts ONNX Runtime's
 * accountant charges that a trace cannot show: known output bytes, input bytes and initializer
 * bytes.  JSON when the text starts with '{' (after white space), CSV otherwise.
 */
#ifndef WS_ESTIMATES_H
#define WS_ESTIMATES_H

#include <stddef.h>
#include <stdint.h>

enum ws_estimate_kind {
    WS_EST_SLOT,        /* Level-1 bytes of a workspace slot */
    WS_EST_OUTPUT,      /* the node's statically known output bytes */
    WS_EST_INPUT,       /* the bytes of the node's inputs, as ORT's input_sizes counts them */
    WS_EST_INITIALIZER, /* the bytes of the initializers the node reads */
};

struct ws_estimate {
    char *node;
    uint8_t kind;  /* enum ws_estimate_kind */
    int64_t slot;  /* WS_EST_SLOT only; -1 otherwise */
    int64_t bytes; /* >= 0 */
};

struct ws_estimates {
    struct ws_estimate *items; /* in the order of the file */
    size_t count;
};

/* Parse `len` bytes of `text`; `name` names the input in messages ("FILE:LINE: ...").  On failure
 * est is empty and err holds one line. */
int ws_estimates_parse(const char *text, size_t len, const char *name, struct ws_estimates *est, char *err,
                       size_t errlen);
/* Read and parse a file. */
int ws_estimates_load(const char *path, struct ws_estimates *est, char *err, size_t errlen);
void ws_estimates_free(struct ws_estimates *est);

#endif

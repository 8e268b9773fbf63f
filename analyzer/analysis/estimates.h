/*
 * The analysis engine, part 2: estimates files (docs/analysis.md, "Estimates files").
 *
 * A file holds per node Level-1 workspace figures by slot and the facts ONNX Runtime's
 * accountant charges that a trace cannot show: known output bytes, input bytes and initializer
 * bytes.  JSON when the text starts with '{' (after white space); ONNX Runtime's node-stats file
 * (NodeStatsRecorder) when its first line is ORT's header; CSV otherwise.  An ORT file is a
 * recorded profile: per node its input bytes (input_sizes + initializers_sizes), dynamic outputs and
 * temporary allocations, its names ORT's unique node names (NAME_HASH).
 */
#ifndef WS_ESTIMATES_H
#define WS_ESTIMATES_H

#include <stddef.h>
#include <stdint.h>

/* The first line of the node-stats file ONNX Runtime's NodeStatsRecorder writes. */
#define WS_ORT_STATS_HEADER "#name,input_sizes,initializers_sizes,total_dynamic_sizes,total_temp_allocations"

enum ws_estimate_kind {
    WS_EST_SLOT,        /* Level-1 bytes of a workspace slot */
    WS_EST_OUTPUT,      /* the node's statically known output bytes */
    WS_EST_INPUT,       /* the bytes of the node's inputs, as ORT's input_sizes counts them */
    WS_EST_INITIALIZER, /* the bytes of the initializers the node reads */
    WS_EST_DYNAMIC,     /* recorded: bytes of the node's dynamically allocated outputs (ORT's total_dynamic_sizes) */
    WS_EST_TEMP,        /* recorded: bytes its kernel requested as temporaries (ORT's total_temp_allocations) */
};

struct ws_estimate {
    char *node;
    uint8_t kind;  /* enum ws_estimate_kind */
    int64_t slot;  /* WS_EST_SLOT only; -1 otherwise */
    int64_t bytes; /* >= 0 */
    char *alias;   /* ORT node-stats files: the name without ORT's "_HASH" suffix; NULL otherwise */
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

/* One row of cuGetProcAddress's table: the form of entry point `name` introduced in CUDA
 * `version` (per_thread: its per-thread-default-stream variant), found at fn.  Rows of a name
 * are consecutive and in ascending version. */
#ifndef WSSIM_PROCS_H
#define WSSIM_PROCS_H

#include <stddef.h>

struct sim_proc {
    const char *name;
    int version;
    int per_thread;
    void *fn;
};

extern const struct sim_proc sim_procs[];
extern const size_t sim_proc_count;

#endif

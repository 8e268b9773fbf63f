/* The table cuGetProcAddress answers from (rows in sim_drv_procs.inc).  This file includes no
 * CUDA header on purpose: cuda.h maps base names to their newest forms with macros, and the
 * table must name every form by its own symbol. */
#include <stddef.h>

#include "sim_procs.h"

#define PROC(name, version, per_thread, symbol) extern char symbol[];
#include "sim_drv_procs.inc"
#undef PROC

#define PROC(name, version, per_thread, symbol) {name, version, per_thread, symbol},
const struct sim_proc sim_procs[] = {
#include "sim_drv_procs.inc"
};
#undef PROC

const size_t sim_proc_count = sizeof sim_procs / sizeof sim_procs[0];

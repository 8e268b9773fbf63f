/*
 * Who a process is in a job: host, kernel boot, rank, and the trace name it chooses from a
 * pattern.  Shared by the tracer (output names), the collector (the processes row) and the CLI.
 * No allocation and no locks: the tracer calls these from its constructor.
 */
#ifndef WS_IDENTITY_H
#define WS_IDENTITY_H

#include <stddef.h>

/* The first of RANK, OMPI_COMM_WORLD_RANK, PMI_RANK, PMIX_RANK, SLURM_PROCID that holds a
 * non-negative integer; -1 when none does.  ws_env_local_rank and ws_env_world_size likewise
 * read LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID, SLURM_LOCALID and WORLD_SIZE,
 * OMPI_COMM_WORLD_SIZE, PMI_SIZE, SLURM_NTASKS. */
long ws_env_rank(void);
long ws_env_local_rank(void);
long ws_env_world_size(void);

/* Host name into out (empty when unknown). */
void ws_host_name(char *out, size_t len);

/* /proc/sys/kernel/random/boot_id into out (empty when unknown): processes that report the
 * same boot id read the same CLOCK_MONOTONIC. */
void ws_boot_id(char *out, size_t len);

/*
 * Expand an output pattern: %r the rank (pid<PID> when no rank variable is set), %l the local
 * rank (likewise), %h the host name, %p the pid, %% a '%'.  A name without '%' is copied.
 * 0, or -1 when the result does not fit or the pattern holds another '%' sequence
 * (*bad receives it, e.g. 'x' for "%x", or 0 for a trailing '%').
 */
int ws_expand_output_name(const char *pattern, long pid, char *out, size_t len, char *bad);

#endif

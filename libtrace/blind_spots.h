/*
 * The blind-spot diagnostics of libwstrace.so (blind_spots.c): what the process did with CUDA
 * that no hook saw.
 */
#ifndef WS_BLIND_SPOTS_H
#define WS_BLIND_SPOTS_H

#include <stddef.h>
#include <stdint.h>

/* At exit, before the spool is converted: write a meta record `blind_spot.<kind>` for each kind
 * found and fill line (len bytes) with what to say about them on stderr; line is empty when
 * nothing was found. */
void ws_blind_spots_report(char *line, size_t len);

/* How many real CUDA definitions the hooks resolved (real_symbols.c): 0 when no hook was ever
 * called, since every hook resolves its real function through ws_real_symbol on its first call. */
uint64_t ws_hooks_reached(void);

#endif

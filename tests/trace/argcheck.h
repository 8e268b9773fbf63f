/*
 * The arguments argcheck_prog passes to five hooked functions, and that libwsargcheck.so, their
 * stand-in definitions, expects to receive.  The signatures cover what a hook's exported entry
 * must hand on untouched (x86-64 and aarch64 calling conventions): structures passed by value in
 * registers (dim3) and in memory (cudaExtent, the 64-byte IPC handles), arguments on the stack
 * after them (cudaLaunchKernel's last two, five of cuLaunchKernel's eleven), and errno.  Every
 * value differs from the others, so that arguments swapped, shifted or read from the wrong stack
 * slot are told apart.
 */
#ifndef ARGCHECK_H
#define ARGCHECK_H

#include <stdint.h>

#define AC_ERRNO_IN  4242 /* errno the program sets before each call; the stand-in finds it */
#define AC_ERRNO_OUT 2424 /* errno the stand-in leaves; the program finds it after the call */

/* cudaLaunchKernel(func, grid, block, args, smem, stream) */
#define AC_RT_FUNC   0x0f0f0f01u
#define AC_RT_GRID   3, 5, 7
#define AC_RT_BLOCK  32, 4, 2
#define AC_RT_ARGS   0x0a0a0a02u
#define AC_RT_SMEM   0x5a5au
#define AC_RT_STREAM 0x0b0b0b03u

/* cudaMalloc3D(pitched, extent): the stand-in answers AC_3D_PITCH and address AC_3D_BASE + call * AC_STEP */
#define AC_3D_WIDTH  1000u
#define AC_3D_HEIGHT 300u
#define AC_3D_DEPTH  20u
#define AC_3D_PITCH  1024u
#define AC_3D_BASE   0x70000000u

/* cudaIpcOpenMemHandle(ptr, handle, flags) and cuIpcOpenMemHandle_v2(ptr, handle, flags): handle
 * byte i is ac_handle_byte(i, salt); the stand-ins answer the address base + call * AC_STEP */
#define AC_RT_IPC_SALT   11u
#define AC_RT_IPC_FLAGS  1u
#define AC_RT_IPC_BASE   0x71000000u
#define AC_DRV_IPC_SALT  29u
#define AC_DRV_IPC_FLAGS 1u
#define AC_DRV_IPC_BASE  0x72000000u

/* cuLaunchKernel(f, gx, gy, gz, bx, by, bz, smem, stream, params, extra) */
#define AC_DRV_FUNC   0x0c0c0c04u
#define AC_DRV_GRID   2, 9, 4
#define AC_DRV_BLOCK  16, 8, 6
#define AC_DRV_SMEM   0x1234u
#define AC_DRV_STREAM 0x0d0d0d05u
#define AC_DRV_PARAMS 0x0e0e0e06u
#define AC_DRV_EXTRA  0x0f0f0f07u

#define AC_STEP 0x100000u

static inline char ac_handle_byte(unsigned i, unsigned salt) { return (char)(i * 7u + salt); }

/* Exported by libwsargcheck.so (no hook has these names): the arguments found wrong so far, and
 * the calls each stand-in received. */
int argcheck_mismatches(void);
int argcheck_calls(void);

#endif

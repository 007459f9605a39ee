/*
 * blas_kernel.h — re-executing a stored run on the OpenBLAS kernel it was
 * made with (`gated sweep --verify-code`).
 *
 * A single-threaded sgemm is a fixed sequence of operations for fixed
 * arguments, but each OpenBLAS kernel ("Prescott", "Haswell", "SkylakeX",
 * …: DYNAMIC_ARCH picks one from the CPU, or from OPENBLAS_CORETYPE) is a
 * different sequence: FMA or not, other blockings of the reduction.  So a
 * result is reproducible bit for bit on the kernel that made it, and only
 * there (docs/determinism.md).  A bitwise verification of a
 * run recorded on another kernel can only succeed on that kernel: where
 * this OpenBLAS build is the stored one's (same version and options, a
 * DYNAMIC_ARCH build) and this CPU can run the stored kernel, the
 * re-execution alone gets OPENBLAS_CORETYPE=<that kernel>.  Training runs
 * never do: they keep the environment's.
 *
 * The stored text comes from a database (perhaps merged from elsewhere), so
 * it is untrusted: only a name from the fixed list below is ever passed on.
 */
#ifndef GATED_CLI_BLAS_KERNEL_H
#define GATED_CLI_BLAS_KERNEL_H

#include <stddef.h>

/* What to re-execute a run on, from the stored run's openblas_version text
 * (the openblas_get_config() of the build that made it) and this build's.
 *   0  the same kernel and build: nothing to set (*kernel = "")
 *   1  another kernel of this same DYNAMIC_ARCH build that this CPU can run:
 *      its name in kernel (for OPENBLAS_CORETYPE)
 *  -1  a bitwise comparison cannot succeed here: why says which (another
 *      OpenBLAS build, a kernel this CPU cannot run, an unknown name) */
int blas_kernel_pick(const char *stored, const char *mine, char *kernel, size_t kcap, char *why, size_t wcap);

/* Whether this CPU can run the named kernel (1), cannot (0), or the name
 * is not one of the known kernels (-1). */
int blas_kernel_runs_here(const char *name);

/* A copy of the NULL-terminated environment env without any
 * OPENBLAS_CORETYPE entry, with OPENBLAS_CORETYPE=kernel added (*own: the
 * one string allocated); NULL when out of memory.  Free both. */
char **blas_kernel_env(char *const *env, const char *kernel, char **own);

#endif

/*
 * real.h — the model's floating-point type.
 *
 * The core is built twice: float (the product) and, with
 * -DGATED_REAL_DOUBLE, double (for finite-difference gradient tests, where
 * float32 round-off would drown the signal).  Math functions come from
 * <tgmath.h> so exp(x) is expf for float and exp for double.
 */
#ifndef GATED_REAL_H
#define GATED_REAL_H

#include <cblas.h>
#include <tgmath.h>

#ifdef GATED_REAL_DOUBLE
typedef double real;
#define GATED_REAL_NAME "f64"
#define cblas_gemm cblas_dgemm
#else
typedef float real;
#define GATED_REAL_NAME "f32"
#define cblas_gemm cblas_sgemm
#endif

#endif

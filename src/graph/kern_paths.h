/* SPDX-License-Identifier: MIT */
/* kern_paths.h - which implementation the kernel seam's products (kern.h)
 * take on this processor, for `dtrain --version` and a run's first lines. */
#ifndef DT_GRAPH_KERN_PATHS_H
#define DT_GRAPH_KERN_PATHS_H

#include <stddef.h>
#include <stdio.h>

/* 1 when dt_kern_sgemm_small computes on its AVX2 and FMA kernel, 0 when
 * on its plain C one: a GCC build for x86-64 on a CPU with both sets that
 * DTRAIN_CPU does not take away (util/cpu_features.h), unless a test
 * asked for the plain path (dt_kern_small_set_generic). Thread-safe. */
int dt_kern_small_simd(void);

/* 1 when dt_kern_sgemm_small computes in bf16 on its AVX512_BF16 kernel:
 * train.precision: bf16 is on (dt_kern_set_bf16), dt_kern_small_simd,
 * and the CPU has AVX-512F and AVX512_BF16 that DTRAIN_CPU leaves. With
 * bf16 on a CPU with AMX-BF16 and no AVX512_BF16 (none known) the small
 * products stay f32. Thread-safe once dt_kern_set_bf16 was called. */
int dt_kern_small_bf16(void);

/* One line, no newline, into buf (n bytes; cut short to fit): where each
 * class of product goes. blas_core is the name of the kernels OpenBLAS
 * chose for itself (openblas_get_corename(); NULL when unknown), as only
 * graph/kern.c may call OpenBLAS for products and this file does not. */
void dt_kern_paths(char *buf, size_t n, const char *blas_core);

/* Writes two lines to out, each after prefix: "CPU " and the kind
 * (util/cpu_features.h, dt_cpu_describe), then "products: " and
 * dt_kern_paths's line. For a run's first lines. */
void dt_kern_paths_say(FILE *out, const char *prefix, const char *blas_core);

#endif

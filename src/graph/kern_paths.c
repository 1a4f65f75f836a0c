/* SPDX-License-Identifier: MIT */
/* kern_paths.c - the kernel seam's products and their implementations on
 * this processor, in words (kern_paths.h). In f32 the dense and attention
 * projections go to oneDNN's f32 matmul where the CPU runs 512-bit FMAs
 * at full width (dt_cpu_fma512_full), else to OpenBLAS, which picks its
 * kernels from CPUID itself (or OPENBLAS_CORETYPE), whatever DTRAIN_CPU
 * says, and the convolutions
 * to oneDNN's f32 matmul where the CPU has AVX-512 (beside OpenBLAS's
 * AVX-512 kernels only the large ones; parallel.kernels and
 * DTRAIN_KERNELS move either, kern.h); with train.precision: bf16 all of
 * them go to oneDNN's bf16 matmul (kern_bf16.c); the attention heads'
 * small products go to kern_small.c, in bf16 too where the CPU has
 * AVX512_BF16. */
#include "graph/kern_paths.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/kern.h"
#include "util/cpu_features.h"

/* Where f32 products of class conv go (dt_kern_onednn_f32), in words:
 * where = 0 OpenBLAS, 1 oneDNN, 2 the large ones on oneDNN. */
static void
f32_lib(char *buf, size_t n, int where, const char *blas_core)
{
	char blas[64];

	snprintf(blas, sizeof blas, "OpenBLAS (%s kernels, its own choice)",
		 blas_core != NULL ? blas_core : "unknown");
	if (where == 0)
		snprintf(buf, n, "%s", blas);
	else
		snprintf(buf, n, "oneDNN's f32 matmul (%s, its own choice)%s%s",
			 dt_cpu_has(DT_CPU_AVX512F) ? "avx512_core" : "avx2",
			 where == 2 ? " where m, n and k are all 32 or more, "
			 "else on " : "", where == 2 ? blas : "");
}

/* "parallel.kernels: NAME", with DTRAIN_KERNELS's part in it. */
static void
lib_choice(char *buf, size_t n)
{
	const char *env = getenv("DTRAIN_KERNELS");
	const char *bad = dt_kern_lib_env_bad();

	if (bad != NULL)
		snprintf(buf, n, "parallel.kernels: %s (DTRAIN_KERNELS=%s "
			 "names no path, ignored)",
			 dt_kern_lib_name(dt_kern_lib()), bad);
	else if (env != NULL && *env != '\0')
		snprintf(buf, n, "parallel.kernels: %s (DTRAIN_KERNELS)",
			 dt_kern_lib_name(dt_kern_lib()));
	else
		snprintf(buf, n, "parallel.kernels: %s",
			 dt_kern_lib_name(dt_kern_lib()));
}

void
dt_kern_paths(char *buf, size_t n, const char *blas_core)
{
	char dense[128], conv[192], choice[128], why[160];
	int full;

	if (n == 0)
		return;
	if (dt_kern_bf16()) {
		snprintf(buf, n, "dense, convolution and attention "
			 "projections in bf16 on oneDNN's matmul (%s, its "
			 "own choice; train.precision: bf16), attention heads "
			 "on dtrain's small kernel (%s)",
			 dt_cpu_has(DT_CPU_AMX_BF16) ? "amx_bf16" :
			 "avx512_core_bf16", dt_kern_small_bf16() ?
			 "avx512_bf16, bf16" : dt_kern_small_simd() ?
			 "avx2+fma, f32" : "plain C, f32");
		return;
	}
	full = dt_cpu_fma512_full(why, sizeof why);
	f32_lib(dense, sizeof dense, dt_kern_onednn_dense(), blas_core);
	f32_lib(conv, sizeof conv, dt_kern_onednn_conv(), blas_core);
	lib_choice(choice, sizeof choice);
	if (strcmp(dense, conv) == 0)
		snprintf(buf, n, "dense, convolution and attention "
			 "projections on %s", dense);
	else
		snprintf(buf, n, "dense and attention projections on %s, "
			 "convolutions on %s", dense, conv);
	snprintf(buf + strlen(buf), n - strlen(buf), ", attention heads on "
		 "dtrain's small kernel (%s); %s; 512-bit FMAs %s: %s; "
		 "train.precision: bf16 %s",
		 dt_kern_small_simd() ? "avx2+fma" : "plain C", choice,
		 full ? "at full width" : "not at full width", why,
		 dt_kern_bf16_missing() != NULL ?
		 "refused (no AVX512_BF16 or AMX-BF16)" :
		 dt_cpu_has(DT_CPU_AMX_BF16) ? "on oneDNN (amx_bf16)" :
		 "on oneDNN (avx512_core_bf16)");
}

void
dt_kern_paths_say(FILE *out, const char *prefix, const char *blas_core)
{
	char cpu[256], paths[1024];

	dt_cpu_describe(cpu, sizeof cpu);
	dt_kern_paths(paths, sizeof paths, blas_core);
	fprintf(out, "%sCPU %s\n%sproducts: %s\n", prefix, cpu, prefix,
		paths);
}

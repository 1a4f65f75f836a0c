/* SPDX-License-Identifier: MIT */
/* kern_paths.c - the kernel seam's products and their implementations on
 * this processor, in words (kern_paths.h). Today every product but the
 * attention heads' goes to OpenBLAS (or, with train.precision: bf16, to
 * oneDNN's bf16 matmul, kern_bf16.c), which picks its kernels from CPUID
 * itself (or OPENBLAS_CORETYPE), whatever DTRAIN_CPU says; the heads'
 * small products go to kern_small.c. */
#include "graph/kern_paths.h"

#include <stdio.h>

#include "graph/kern.h"
#include "util/cpu_features.h"

void
dt_kern_paths(char *buf, size_t n, const char *blas_core)
{
	if (n == 0)
		return;
	if (dt_kern_bf16())
		snprintf(buf, n, "dense, convolution and attention "
			 "projections in bf16 on oneDNN's matmul (%s, its "
			 "own choice; train.precision: bf16), attention heads "
			 "on dtrain's small kernel (%s, f32)",
			 dt_cpu_has(DT_CPU_AMX_BF16) ? "amx_bf16" :
			 "avx512_core_bf16", dt_kern_small_simd() ?
			 "avx2+fma" : "plain C");
	else
		snprintf(buf, n, "dense and convolution on OpenBLAS (%s "
			 "kernels, its own choice), attention heads on "
			 "dtrain's small kernel (%s); train.precision: bf16 %s",
			 blas_core != NULL ? blas_core : "unknown",
			 dt_kern_small_simd() ? "avx2+fma" : "plain C",
			 dt_kern_bf16_missing() != NULL ?
			 "refused (no AVX512_BF16 or AMX-BF16)" :
			 dt_cpu_has(DT_CPU_AMX_BF16) ? "on oneDNN (amx_bf16)" :
			 "on oneDNN (avx512_core_bf16)");
}

void
dt_kern_paths_say(FILE *out, const char *prefix, const char *blas_core)
{
	char cpu[256], paths[256];

	dt_cpu_describe(cpu, sizeof cpu);
	dt_kern_paths(paths, sizeof paths, blas_core);
	fprintf(out, "%sCPU %s\n%sproducts: %s\n", prefix, cpu, prefix,
		paths);
}

/* kern.c - the OpenBLAS backend of the kernel seam (kern.h). */
#include "graph/kern.h"

#include <cblas.h>

void
dt_kern_sgemm(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
	      float alpha, const float *a, int64_t lda, const float *b,
	      int64_t ldb, float beta, float *c, int64_t ldc)
{
	cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
		    trans_b ? CblasTrans : CblasNoTrans, (int)m, (int)n,
		    (int)k, alpha, a, (int)lda, b, (int)ldb, beta, c,
		    (int)ldc);
}

int
dt_kern_set_threads(int n)
{
	int before = openblas_get_num_threads();

	if (n != before)
		openblas_set_num_threads(n);
	return before;
}

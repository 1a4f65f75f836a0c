/* kern.h - the kernel seam: every matrix product and every hot loop of the
 * layers goes through the functions declared here, so that another backend
 * (bf16 on AVX-512, a GPU) is one new file behind this header instead of
 * edits in every layer.
 *
 * Today's backend (kern.c) calls OpenBLAS for the products. Matrices are
 * float32 and row-major throughout, as everywhere in graph/. */
#ifndef DT_GRAPH_KERN_H
#define DT_GRAPH_KERN_H

#include <stdint.h>

/* C(m, n) = alpha * op(A) op(B) + beta * C, row-major, where op(A) is A
 * (m, k) or, with trans_a, A^T for A stored (k, m); likewise op(B) is B
 * (k, n) or B^T for B stored (n, k). lda/ldb/ldc are the row strides in
 * floats (>= the stored row length), which lets callers work on column or
 * row slices of a larger buffer without copies. beta = 0 overwrites C
 * (its old contents may be NaN); beta = 1 accumulates into it.
 * m, n, k, lda, ldb and ldc must fit in an int (the BLAS interface);
 * callers' shapes come from the plan, which bounds them. Nothing is
 * allocated; no error is possible. Reference: the BLAS sgemm contract
 * (Dongarra et al., "A set of level 3 basic linear algebra subprograms",
 * ACM TOMS 16(1), 1990). */
void dt_kern_sgemm(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
		   float alpha, const float *a, int64_t lda, const float *b,
		   int64_t ldb, float beta, float *c, int64_t ldc);

/* Sets the threads the BLAS runs the following products on (n >= 1) and
 * returns the count before, so that a caller that runs products inside
 * threads of its own can have each run on its calling thread alone and
 * then put the count back. One thread at a time may call it. */
int dt_kern_set_threads(int n);

#endif

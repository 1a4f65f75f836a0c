/* SPDX-License-Identifier: MIT */
/* decay.c - the weight-decay spans of a model (decay.h).
 *
 * The rank rule is the one of nanoGPT's configure_optimizers (decay the
 * parameters with dim >= 2, not the biases and norm gains), which keeps
 * the decay off the tensors that only shift or scale activations. */
#include "train/decay.h"

#include <stdlib.h>

#include "util/alloc.h"

static int
by_offset(const void *a, const void *b)
{
	const struct dt_optim_span *x = a, *y = b;

	return (x->offset > y->offset) - (x->offset < y->offset);
}

struct dt_optim_span *
dt_decay_spans(const struct dt_model *m, enum dt_decay_set set,
	       size_t *n_spans)
{
	size_t n_trained = dt_model_n_trained(m);
	int n_t = dt_model_n_tensors(m);
	struct dt_optim_span *s = dt_xcalloc((size_t)n_t + 1, sizeof *s);
	size_t n = 0, k = 0;

	if (set == DT_DECAY_ALL) {
		s[0].offset = 0;
		s[0].len = n_trained;
		*n_spans = 1;
		return s;
	}
	for (int i = 0; i < n_t; i++) {
		struct dt_tensor_info ti;

		dt_model_tensor_info(m, i, &ti);
		if (ti.n_dims < 2 || ti.offset >= n_trained || ti.size <= 0)
			continue;
		s[n].offset = ti.offset;
		s[n++].len = (size_t)ti.size;
	}
	qsort(s, n, sizeof *s, by_offset);
	for (size_t i = 0; i < n; i++) {
		if (k > 0 && s[k - 1].offset + s[k - 1].len == s[i].offset)
			s[k - 1].len += s[i].len;
		else
			s[k++] = s[i];
	}
	*n_spans = k;
	return s;
}

int
dt_decay_restricted(const struct dt_job *job)
{
	return job->train.weight_decay > 0 &&
	       job->train.decay == DT_DECAY_WEIGHTS;
}

/* SPDX-License-Identifier: MIT */
/* stages.c - cutting a model's nodes into pipeline stages (see plan.h):
 * the exact linear partition of the nodes' costs (the "painter's
 * partition"; Skiena, "The Algorithm Design Manual", 2nd ed., section 8.5),
 * refined to the lexicographic min-max cut (the largest stage as small as
 * possible, then the next largest, and so on: the bottleneck's optimum
 * leaves the other stages balanced too), or the job's own
 * parallel.stages. */
#include "plan/plan.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "util/alloc.h"

/* best[p * (n + 1) + i]: the smallest largest part sum of items i .. n-1
 * cut into p non-empty parts (INFINITY when there are fewer items than
 * parts). Sums are differences of the same prefix sums everywhere, so a
 * value found here compares equal to the part that gives it. */
static double *
suffix_table(const double *prefix, int n, int k)
{
	double *best = dt_xmalloc((size_t)(k + 1) * (size_t)(n + 1),
				  sizeof *best);	/* (k + 1, n + 1) */

	for (int i = 0; i <= n; i++)
		best[i] = i == n ? 0 : INFINITY;
	for (int p = 1; p <= k; p++) {
		double *row = best + (size_t)p * (size_t)(n + 1); /* (n + 1) */
		const double *prev = row - (n + 1);	/* (n + 1) */

		for (int i = 0; i <= n; i++) {
			row[i] = INFINITY;
			/* The first part is i .. e, the rest p - 1 parts. */
			for (int e = i; e < n && n - e - 1 >= p - 1; e++) {
				double first = prefix[e + 1] - prefix[i];
				double v = first > prev[e + 1] ? first :
					   prev[e + 1];

				if (v < row[i])
					row[i] = v;
			}
		}
	}
	return best;
}

/* Inserts x into the largest-first vector v (len entries) giving out
 * (len + 1 entries, largest first). */
static void
merge_desc(double x, const double *v, int len, double *out)
{
	int j = 0;

	for (; j < len && v[j] >= x; j++)
		out[j] = v[j];
	out[j] = x;
	for (; j < len; j++)
		out[j + 1] = v[j];
}

/* < 0, 0, > 0 as the largest-first vector a (len entries) is
 * lexicographically smaller than, equal to or larger than b. */
static int
cmp_desc(const double *a, const double *b, int len)
{
	for (int j = 0; j < len; j++)
		if (a[j] != b[j])
			return a[j] < b[j] ? -1 : 1;
	return 0;
}

double
dt_plan_partition(const double *cost, int n, int k, int *part)
{
	/* prefix: (n + 1) */
	double *prefix = dt_xmalloc((size_t)n + 1, sizeof *prefix);
	double *best, target, largest = 0;	/* best: (k + 1, n + 1) */
	/* vec_prev / vec_cur: for each start i (n + 1 of them, k doubles
	 * apart) the part sums, largest first, of the lexicographically
	 * smallest cut of items i .. n-1 into p - 1 / p parts, none larger
	 * than target; end[p * (n + 1) + i]: the last item of that cut's
	 * first part (-1: no such cut). */
	double *vec_prev = dt_xmalloc((size_t)(n + 1) * (size_t)k,
				      sizeof *vec_prev);	/* (n + 1, k) */
	double *vec_cur = dt_xmalloc((size_t)(n + 1) * (size_t)k,
				     sizeof *vec_cur);	/* (n + 1, k) */
	double *cand = dt_xmalloc((size_t)k, sizeof *cand);	/* (k) */
	/* end: (k + 1, n + 1) */
	int *end = dt_xmalloc((size_t)(k + 1) * (size_t)(n + 1), sizeof *end);
	int i = 0;

	prefix[0] = 0;
	for (int j = 0; j < n; j++)
		prefix[j + 1] = prefix[j] + cost[j];
	best = suffix_table(prefix, n, k);
	target = best[(size_t)k * (size_t)(n + 1)];
	free(best);
	/* Zero parts cut only the empty suffix. */
	for (int j = 0; j <= n; j++)
		end[j] = j == n ? n : -1;
	/* The sorted vector of a cut is its first part merged into the
	 * rest's, and merging one value keeps the lexicographic order of
	 * the rests strictly, so the best cut of i .. n-1 is a first part
	 * and the best cut of what follows it (dynamic programming as for
	 * the largest part alone). Parts larger than target are never in
	 * the best cut of the whole. Among equal vectors the longest first
	 * part wins, so the earlier parts take the most. */
	for (int p = 1; p <= k; p++) {
		/* end_prev: (n + 1) */
		const int *end_prev = end + (size_t)(p - 1) * (size_t)(n + 1);
		int *end_cur = end + (size_t)p * (size_t)(n + 1); /* (n + 1) */
		double *swap;			/* (n + 1, k) */

		for (int s = 0; s <= n; s++) {
			double *v = vec_cur + (size_t)s * (size_t)k; /* (k) */

			end_cur[s] = -1;
			for (int e = s; e < n && n - e - 1 >= p - 1; e++) {
				double first = prefix[e + 1] - prefix[s];

				if (first > target)
					break;
				if (end_prev[e + 1] < 0)
					continue;
				merge_desc(first, vec_prev + (size_t)(e + 1) *
					   (size_t)k, p - 1, cand);
				if (end_cur[s] < 0 ||
				    cmp_desc(cand, v, p) <= 0) {
					memcpy(v, cand, (size_t)p * sizeof *v);
					end_cur[s] = e;
				}
			}
		}
		swap = vec_prev;
		vec_prev = vec_cur;
		vec_cur = swap;
	}
	for (int p = k; p >= 1; p--) {
		int e = end[(size_t)p * (size_t)(n + 1) + (size_t)i];

		assert(e >= i);
		for (int j = i; j <= e; j++)
			part[j] = k - p;
		if (prefix[e + 1] - prefix[i] > largest)
			largest = prefix[e + 1] - prefix[i];
		i = e + 1;
	}
	free(end);
	free(cand);
	free(vec_cur);
	free(vec_prev);
	free(prefix);
	return largest;
}

/* "(dense0, dense0.relu, ..., loss)": the names of model's nodes, the
 * middle left out of a long list. */
static void
node_names(const struct dt_model *model, char *buf, size_t size)
{
	int n = dt_model_n_layers(model);
	size_t len = (size_t)snprintf(buf, size, "(");

	for (int i = 0; i < n && len < size; i++) {
		struct dt_layer_info li;

		if (n > 8 && i >= 3 && i < n - 2) {
			if (i == 3)
				len += (size_t)snprintf(buf + len, size - len,
							", ...");
			continue;
		}
		dt_model_layer_info(model, i, &li);
		len += (size_t)snprintf(buf + len, size - len, "%s%s",
					i ? ", " : "", li.name);
	}
	if (len < size)
		snprintf(buf + len, size - len, ")");
}

/* The first node of each stage from parallel.stages into first[1 ..
 * n_stages] (first[0] = 0). */
static enum dt_status
named_stages(const struct dt_job *job, const struct dt_model *model, int pp,
	     int *first, struct dt_error *err)
{
	int n = dt_model_n_layers(model);
	char where[512];

	if (job->parallel.n_stages + 1 != pp) {
		dt_job_where(job, "parallel.stages", where, sizeof where);
		return dt_errorf(err, DT_ERR_PLAN, "%s%d names make %d "
				 "stages, but the pipeline has %d; give %d "
				 "name%s or set pipeline_parallel to %d",
				 where, job->parallel.n_stages,
				 job->parallel.n_stages + 1, pp, pp - 1,
				 pp - 1 == 1 ? "" : "s",
				 job->parallel.n_stages + 1);
	}
	first[0] = 0;
	for (int s = 0; s < job->parallel.n_stages; s++) {
		int layer = -1;
		char key[64];

		for (int j = 0; j < job->model.n_layers; j++)
			if (strcmp(job->model.layers[j].name,
				   job->parallel.stages[s]) == 0) {
				layer = j;
				break;
			}
		first[s + 1] = -1;
		for (int i = 0; i < n && layer >= 0; i++) {
			struct dt_layer_info li;

			dt_model_layer_info(model, i, &li);
			if (li.job_layer == layer) {
				first[s + 1] = i;
				break;
			}
		}
		if (first[s + 1] <= first[s]) {
			snprintf(key, sizeof key, "parallel.stages.%d", s);
			dt_job_where(job, key, where, sizeof where);
			return dt_errorf(err, DT_ERR_PLAN, "%s\"%s\" does not "
					 "start a stage after the one before "
					 "(stage %d would be empty)", where,
					 job->parallel.stages[s], s);
		}
	}
	return DT_OK;
}

enum dt_status
dt_plan_stages(const struct dt_job *job, const struct dt_model *model, int pp,
	       int *stage_of_node, struct dt_error *err)
{
	int n = dt_model_n_layers(model);
	char where[512], names[512];
	enum dt_status st;

	/* The loss (the last node) goes with the node before it: a stage
	 * of the loss alone would idle while it waits for its input. */
	if (pp < 1 || pp > (n > 1 ? n - 1 : 1)) {
		node_names(model, names, sizeof names);
		dt_job_where(job, "parallel.pipeline_parallel", where,
			     sizeof where);
		return dt_errorf(err, DT_ERR_PLAN, "%s%d stages but the model "
				 "has %d nodes %s; a stage needs at least "
				 "one and the loss goes with the node before "
				 "it: use at most %d stages", where, pp, n,
				 names, n > 1 ? n - 1 : 1);
	}
	if (job->parallel.n_stages > 0) {
		/* first: (pp + 1) */
		int *first = dt_xmalloc((size_t)pp + 1, sizeof *first);

		st = named_stages(job, model, pp, first, err);
		if (st == DT_OK) {
			first[pp] = n;
			for (int s = 0; s < pp; s++)
				for (int i = first[s]; i < first[s + 1]; i++)
					stage_of_node[i] = s;
		}
		free(first);
		if (st != DT_OK)
			return st;
		dt_job_where(job, "parallel.stages", where, sizeof where);
	} else {
		double *cost = dt_xmalloc((size_t)n, sizeof *cost); /* (n) */
		int items = n > 1 ? n - 1 : 1;

		for (int i = 0; i < n; i++) {
			struct dt_layer_info li;

			dt_model_layer_info(model, i, &li);
			/* Forward plus backward, as the step costs it. */
			cost[i] = job->parallel.balance == DT_BALANCE_PARAMS ?
				  (double)li.n_params : 3 * li.fwd_flops;
		}
		/* The loss and the node before it are one item. */
		if (n > 1)
			cost[n - 2] += cost[n - 1];
		dt_plan_partition(cost, items, pp, stage_of_node);
		if (n > 1)
			stage_of_node[n - 1] = stage_of_node[n - 2];
		free(cost);
		dt_job_where(job, "parallel.pipeline_parallel", where,
			     sizeof where);
	}
	st = dt_model_check_stages(model, stage_of_node, pp, err);
	if (st != DT_OK)
		dt_error_prefix(err, "%s", where);
	return st;
}

/* Whether job splits a tied head's classes as its table's rows
 * (parallel.tied_slices), where the tensor ranks would own their slices
 * (dt_plan_tp_sliced's job conditions): the head then reads the rank's
 * rows of its tied copy, split as the table is. Else a tied head stays
 * whole, and a tied model's tensor-parallel runs give one rank's bits
 * (tests/integration/tied.sh). */
static bool
split_tied(const struct dt_job *job)
{
	return job->parallel.tied_slices &&
	       job->parallel.sync != DT_SYNC_PARAMETER_SERVER &&
	       (job->parallel.zero < 2 || job->parallel.zero_slices);
}

enum dt_status
dt_plan_split_tensors(const struct dt_job *job, int tp_size,
		      struct dt_model *model, struct dt_error *err)
{
	enum dt_status st = DT_OK;

	if (tp_size > 1)
		st = dt_model_plan_tensor_parallel(model, job, tp_size, err);
	if (st == DT_OK && tp_size > 1)
		st = dt_model_plan_vocab_parallel(model, job, tp_size,
						  split_tied(job), err);
	return st;
}

enum dt_status
dt_plan_layout(const struct dt_job *job, const struct dt_plan *plan,
	       struct dt_model *model, int *stage_of_node,
	       struct dt_error *err)
{
	int *own = NULL;			/* (n_nodes) */
	enum dt_status st = DT_OK;

	st = dt_plan_split_tensors(job, plan->tp_size, model, err);
	if (st != DT_OK)
		return st;
	if (stage_of_node == NULL)
		stage_of_node = own = dt_xmalloc(
			(size_t)dt_model_n_layers(model), sizeof *own);
	st = dt_plan_stages(job, model, plan->pp_size > 0 ? plan->pp_size : 1,
			    stage_of_node, err);
	free(own);
	return st;
}

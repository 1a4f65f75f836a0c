/* SPDX-License-Identifier: MIT */
/* init.c - the job's initialisation choice applied to the model's weight
 * tensors. A layer's infer declares a rule for each tensor (graph/
 * layer.h, enum dt_init): 0 for biases, 1 for norm gains, and for
 * weights its type's own, which `auto` (the default) keeps:
 *   dense    He-normal after relu or gelu, Xavier-uniform otherwise
 *   conv2d   He-normal
 *   embedding, pos_embedding, attention   N(0, 0.02^2), as GPT-2
 * The choice is a layer's `init:`, else model.init:
 *   he         N(0, 2 / fan_in): He, Zhang, Ren and Sun, "Delving Deep
 *              into Rectifiers", ICCV 2015 (the variance that keeps the
 *              second moment of relu layers' outputs constant)
 *   xavier     U(-a, a), a = sqrt(6 / (fan_in + fan_out)): Glorot and
 *              Bengio, "Understanding the difficulty of training deep
 *              feedforward neural networks", AISTATS 2010 (variance
 *              2 / (fan_in + fan_out))
 *   normal(s)  N(0, s^2)
 *   gpt2       N(0, 0.02^2), and the output matrix of each residual
 *              branch N(0, (0.02 / sqrt(N))^2) with N the number of
 *              residual adds: Radford et al., "Language Models are
 *              Unsupervised Multitask Learners", 2019, section 2.3,
 *              which scales "the weights of residual layers at
 *              initialization by a factor of 1/sqrt(N) where N is the
 *              number of residual layers"; a block has two (attention
 *              and MLP), so N = 2 x blocks, as GPT-2's code and nanoGPT
 *              count it. Biases 0 and norm gains 1, as always.
 * fan_in is the inputs that one output sums (dense: in; conv2d: C*K*K;
 * attention: the width C), fan_out the outputs one input reaches. An
 * embedding's table is looked up, not multiplied, and has no fan: under
 * model.init he or xavier it keeps its own N(0, 0.02^2), and job/
 * refuses the two words as an embedding's own init:.
 *
 * Which weights GPT-2's scaling reaches is read off the graph rather than
 * marked in the job: a residual branch is a layer with an output matrix
 * (out_proj: dense, conv2d, attention) whose output reaches an add node
 * through dropout nodes only, each node on the way read by nothing else.
 * The stream an add's other input carries is read by a branch's layernorm
 * too, so it is never taken for a branch; a dense with an
 * activation ends in the activation node, which is not an output
 * matrix. A layer's own init: overrides this as any other choice. */
#include "graph/init.h"

#include <math.h>
#include <stdlib.h>

#include "graph/model.h"
#include "util/alloc.h"

/* The node that feeds an add through node i: i itself, or what a chain of
 * dropouts from i reads, when every node on the way is read only by the
 * next; -1 otherwise. */
static int
branch_source(const struct dt_model *m, int i)
{
	while (i != DT_NODE_INPUT) {
		const struct dt_node *n = &m->nodes[i];

		if (n->n_consumers != 1)
			return -1;
		if (n->ops != &dt_layer_dropout)
			return i;
		i = n->inputs[0];
	}
	return -1;
}

static bool
has_out_proj(const struct dt_node *n)
{
	for (int k = 0; k < n->n_tensors; k++)
		if (n->tensor[k].out_proj)
			return true;
	return false;
}

int
dt_model_residual_branches(const struct dt_model *m, bool *branch)
{
	int adds = 0;

	for (int i = 0; i < m->n_nodes; i++)
		branch[i] = false;
	for (int i = 0; i < m->n_nodes; i++) {
		const struct dt_node *n = &m->nodes[i];
		bool any = false;

		if (n->ops != &dt_layer_add)
			continue;
		for (int k = 0; k < n->n_inputs; k++) {
			int b = branch_source(m, n->inputs[k]);

			if (b >= 0 && has_out_proj(&m->nodes[b])) {
				branch[b] = true;
				any = true;
			}
		}
		adds += any;
	}
	return adds;
}

/* Sets weight tensor pt's rule from choice c; residual_std > 0 when pt is
 * a residual branch's output matrix. */
static void
choose(struct dt_param_tensor *pt, const struct dt_init_choice *c,
       float residual_std)
{
	switch (c->rule) {
	case DT_INIT_RULE_INHERIT:
	case DT_INIT_RULE_AUTO:
		break;
	case DT_INIT_RULE_HE:
		if (pt->fan_in > 0)
			pt->init = DT_INIT_HE_NORMAL;
		break;
	case DT_INIT_RULE_XAVIER:
		if (pt->fan_in > 0)
			pt->init = DT_INIT_XAVIER_UNIFORM;
		break;
	case DT_INIT_RULE_NORMAL:
		pt->init = DT_INIT_NORMAL;
		pt->std = (float)c->std;
		break;
	case DT_INIT_RULE_GPT2:
		pt->init = DT_INIT_NORMAL;
		pt->std = residual_std > 0.0f ? residual_std
					       : (float)DT_INIT_GPT2_STD;
		break;
	}
}

void
dt_model_choose_init(struct dt_model *m, const struct dt_job *job)
{
	bool *branch = dt_xcalloc((size_t)m->n_nodes, sizeof *branch);
	int adds = dt_model_residual_branches(m, branch);
	float res_std = adds > 0 ? (float)(DT_INIT_GPT2_STD /
					   sqrt((double)adds)) : 0.0f;

	for (int i = 0; i < m->n_nodes; i++) {
		struct dt_node *n = &m->nodes[i];
		const struct dt_init_choice *c =
			n->spec.init.rule != DT_INIT_RULE_INHERIT
			? &n->spec.init : &job->model.init;

		for (int k = 0; k < n->n_tensors; k++) {
			struct dt_param_tensor *pt = &n->tensor[k];

			if (pt->init == DT_INIT_ZERO || pt->init == DT_INIT_ONE)
				continue;
			choose(pt, c, branch[i] && pt->out_proj ? res_std
								: 0.0f);
		}
	}
	free(branch);
}

/* SPDX-License-Identifier: MIT */
/* init.h - what graph.c calls to apply the job's initialisation choice
 * (model.init, a layer's init:) to the declared tensors; init.c says
 * the rules. Internal to graph/. */
#ifndef DT_GRAPH_INIT_H
#define DT_GRAPH_INIT_H

#include <stdbool.h>

#include "job/job.h"

struct dt_model;

/* GPT-2's standard deviation for weights (Radford et al., 2019). */
#define DT_INIT_GPT2_STD 0.02

/* Sets the rule (init, std) of every weight tensor of m's nodes from
 * job: a node's layer `init:`, else job->model.init; auto (and a
 * model.init of DT_INIT_RULE_INHERIT, a job made in code) keeps the rule
 * the layer's infer declared. Tensors declared DT_INIT_ZERO or
 * DT_INIT_ONE (biases, norm gains, running statistics) keep theirs. Runs
 * after shape inference (it reads n_consumers) on every node of the
 * model, whatever stage m runs, and draws nothing: graph.c's init_params
 * draws from the rules. Works on a shapes-only model. */
void dt_model_choose_init(struct dt_model *m, const struct dt_job *job);

/* The number of residual adds of m: add nodes with at least one input
 * that is a residual branch (init.c), which is 2 per transformer block;
 * branch[i] (n_nodes entries, written whole) says whether node i is the
 * layer whose output matrix starts such a branch. */
int dt_model_residual_branches(const struct dt_model *m, bool *branch);

#endif

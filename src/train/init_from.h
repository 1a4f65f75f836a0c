/* SPDX-License-Identifier: MIT */
/* init_from.h - model.init_from: a run that starts from the parameters of
 * a safetensors file (fine-tuning) instead of its random init. */
#ifndef DT_TRAIN_INIT_FROM_H
#define DT_TRAIN_INIT_FROM_H

#include "graph/graph.h"
#include "util/status.h"

struct dt_run;

/* Reads the safetensors file at path into params, the parameter arena
 * (dt_model_n_params(m) floats) laid out as m's tensors: each tensor
 * i named "NODE.NAME" (dt_model_tensor_info), float32, of m's shape, as
 * checkpoints and `dtrain export` (its default format) write them. The
 * file must hold exactly these tensors; a file that `dtrain export
 * --format torch` wrote (PyTorch's layouts) is refused as such, since a
 * square weight would pass the shape check transposed. A tied copy (a
 * dense layer's `tie:`) is not in the file: it is filled from its
 * embedding's table (dt_model_tie_fill). Returns DT_OK;
 * DT_ERR_FORMAT
 * naming the file and the tensor for a shape that differs (with both
 * shapes), a tensor missing or one the model does not have; DT_ERR_IO.
 * On error params holds unspecified values. path may also be a
 * checkpoint directory written in shards (ckpt.h): its parameter files
 * are read by name (dt_ckpt_load_params). */
enum dt_status dt_init_import(const struct dt_model *m, float *params,
			      const char *path, struct dt_error *err);

/* The parameter files of the sharded checkpoint at path hold exactly the
 * tensors of r's whole model (dt_model_new's shapes, tied copies left
 * out), by name and shape, from their headers alone
 * (dt_ckpt_check_params): what dt_init_import checks, for a load whose
 * ranks then read their own parts. Errors as dt_init_import's. */
enum dt_status dt_init_check_names(struct dt_run *r, const char *path,
				   struct dt_error *err);

/* Collective over every rank of r: when the job names model.init_from
 * and the run did not resume from a checkpoint (r->resumed_from < 0),
 * rank 0 reads the whole model's parameters from the file and every rank
 * takes them (its stage's share in a split layout). Else DT_OK at once.
 * Errors as dt_init_import's, prefixed with where model.init_from is in
 * the job; every rank returns the same status. */
enum dt_status dt_run_init_from(struct dt_run *r, struct dt_error *err);

#endif

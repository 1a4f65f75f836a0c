/* SPDX-License-Identifier: MIT */
/* torch_export.h - `dtrain export --format torch`: a run's parameters in
 * PyTorch's layouts and names, with the job and the layer graph. */
#ifndef DT_CMD_TORCH_EXPORT_H
#define DT_CMD_TORCH_EXPORT_H

#include <stdint.h>

#include "util/status.h"

/* Writes the parameters of the checkpoint of the run in dir that step
 * names (dt_cmd_find_checkpoint: a step, DT_CMD_CKPT_NEWEST or
 * DT_CMD_CKPT_BEST) to the safetensors file out (atomically), renamed and transposed as
 * torch.nn modules hold them (torch_export.c says how), with
 * __metadata__ {"format": "pt", "dtrain_format": "torch-1", "step",
 * "job": the resolved job as YAML, "graph": the layer graph as JSON}.
 * *step is the checkpoint's step. Errors as dt_cmd_model_open, DT_ERR_IO
 * naming out, DT_ERR_USAGE when two layer names map to one module name. */
enum dt_status dt_cmd_export_torch(const char *dir, int64_t which,
				   const char *out, int64_t *step,
				   struct dt_error *err);

#endif

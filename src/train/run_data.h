/* SPDX-License-Identifier: MIT */
/* run_data.h - loading a run's data. Internal to train/. */
#ifndef DT_TRAIN_RUN_DATA_H
#define DT_TRAIN_RUN_DATA_H

#include "train/state.h"

/* Fetches r->data_job's URL sources (collective), builds a text's
 * vocabulary (rank 0 saves it as RUN_DIR/vocab.bin), opens the train and
 * eval splits into r->train and r->eval, and checks them against the
 * model: the input size, the labels per sample, an embedding row for
 * every token id. progress: show the downloads. DT_ERR_IO /
 * DT_ERR_FORMAT / DT_ERR_DATA naming the file or the job key. */
enum dt_status dt_run_load_data(struct dt_run *r, int progress,
				struct dt_error *err);

/* Rank 0, resume --start-over once no checkpoint was found: saves the
 * vocabulary made now over the run directory's tokenizer.json or
 * vocab.bin when they differed (r->vocab_changed, set by
 * dt_run_load_data), saying so on stderr; else does nothing. DT_ERR_IO
 * naming the file when it cannot be written. */
enum dt_status dt_run_vocab_replace(struct dt_run *r, struct dt_error *err);

#endif

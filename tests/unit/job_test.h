/* SPDX-License-Identifier: MIT */
/* job_test.h - what the files of the job test share. */
#ifndef DT_JOB_TEST_H
#define DT_JOB_TEST_H

#include <check.h>

#include "job/job.h"
#include "util/status.h"

extern struct dt_job job;	/* the job under test */
extern struct dt_error err;	/* the last parse's error */
extern const char min_job[];	/* the least a job needs */

/* Parses text as file name with the overrides into job and err. */
enum dt_status parse_as(const char *name, const char *text,
			const char *const *sets, int n_sets);
/* Parses text as /jobs/job.yaml. */
enum dt_status parse(const char *text);
/* Parses text as job.yaml with the overrides and expects exactly msg. */
void expect_error(const char *text, const char *const *sets, int n_sets,
		  const char *msg);
/* min_job with one line appended to its train section (a static buffer). */
const char *min_with(const char *train_line);
/* A job whose model.layers are the lines of layers, the first on line 6
 * (a static buffer):
 *   1 data:
 *   2   train: {images: a.idx, labels: b.idx}
 *   3 model:
 *   4   input_shape: [1, 8, 8]
 *   5   layers:
 *   6 LAYERS...
 *     train: {micro_batch: 8, steps: 10, lr: 0.1}  */
const char *layers_job(const char *layers);
/* A job of one dense layer with the text of sections after its model,
 * starting on line 6 (a static buffer):
 *   1 model:
 *   2   input_shape: [4]
 *   3   layers: [{type: dense, units: 2, name: a}, {type: dense,
 *                 units: 2, name: b}, {type: dense, units: 2, name: c}]
 *   4 train: {micro_batch: 8, steps: 10, lr: 0.1}
 *   5 data:
 *   6 DATA (indented by the caller)...
 *     TAIL... */
const char *data_job(const char *data, const char *tail);
/* The words of `type:`, "dense, conv2d, ...", from the list in
 * job/layer_types.h (a static buffer). */
const char *layer_type_words(void);
/* The job written out by dt_job_write (caller frees). */
char *write_text(const struct dt_job *j);

/* The other test cases. */
TCase *job_error_tcase(void);
TCase *job_layer_tcase(void);
TCase *job_section_tcase(void);
TCase *job_bound_tcase(void);
TCase *job_utf8_tcase(void);

#endif

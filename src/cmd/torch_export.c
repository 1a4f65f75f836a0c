/* SPDX-License-Identifier: MIT */
/* torch_export.c - a run's parameters as PyTorch modules hold them.
 *
 * Each job layer becomes one torch module named by the layer's name with
 * '.' turned into '_' (torch module names cannot hold dots: block.0.attn
 * becomes block_0_attn), its tensors named "<module>.<parameter>":
 *   dense        weight (out, in) as nn.Linear (dtrain keeps (in, out):
 *                transposed here), bias (out)
 *   conv2d       weight (OC, C, K, K), bias (OC): nn.Conv2d, as dtrain
 *   attention    in_proj_weight (3C, C) rows [q | k | v], in_proj_bias
 *                (3C), out_proj.weight (C, C), out_proj.bias (C): the
 *                tensors of nn.MultiheadAttention (dtrain's qkv_weight
 *                (C, 3C) and proj_weight (C, C), transposed)
 *   layernorm    weight, bias (C): nn.LayerNorm
 *   batchnorm    weight, bias, running_mean, running_var (C):
 *                nn.BatchNorm1d/2d, the running statistics as buffers
 *   dense with `tie:`  bias only; the graph's "tie" names the embedding
 *                module whose weight (vocab, dim) is nn.Linear's, the
 *                one tensor (the loader ties them)
 *   embedding    weight (vocab, dim): nn.Embedding
 *   pos_embedding weight (length, dim)
 * __metadata__ carries the resolved job (YAML) and the graph (JSON): the
 * model's input shape, the float32 scale data/ applies to features, with
 * data.normalize its map (input_normalize: kind, and per feature the
 * float32 shift and mul), its loss and output layer, and per layer its
 * name,
 * module key, type, inputs (layer names; "input" is the model input, a
 * name means that layer's output after its activation), activation,
 * input and output shapes (no batch) and the settings that its torch
 * module needs, defaults resolved (pool stride, eps). contrib/
 * dtrain_torch.py reads it back into a module. */
#include "cmd/torch_export.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt/ckpt.h"
#include "cmd/model_io.h"
#include "graph/graph.h"
#include "graph/layer.h"
#include "graph/model.h"
#include "train/rundir.h"
#include "util/alloc.h"

/* model.loss as the job writes it, by enum dt_loss_kind. */
static const char *const loss_words[] = {
#define LOSS_WORD(NAME, word, ops) #word,
	DT_LOSS_TYPES(LOSS_WORD)
#undef LOSS_WORD
};

/* The type word of a layer kind, from the one list of layer types
 * (job/layer_types.h), so a new type needs no line here. */
#define KIND_WORD_CASE(NAME, word, ...) \
	case DT_LAYER_##NAME:           \
		return #word;
static const char *
kind_word(enum dt_layer_kind k)
{
	switch (k) {
		DT_LAYER_TYPES(KIND_WORD_CASE)
	}
	return "unknown";
}
#undef KIND_WORD_CASE

/* The torch module name of a layer name. */
static void
module_key(const char *name, char *buf, size_t size)
{
	snprintf(buf, size, "%s", name);
	for (char *p = buf; *p != '\0'; p++)
		if (*p == '.')
			*p = '_';
}

/* The first node made from job layer i (the layer itself; its activation
 * node follows it). */
static const struct dt_node *
layer_node(const struct dt_model *m, int i)
{
	for (int j = 0; j < m->n_nodes; j++)
		if (m->nodes[j].layer == i)
			return &m->nodes[j];
	return NULL;
}

static struct json_object *
shape_json(const struct dt_shape *s)
{
	struct json_object *a = json_object_new_array();

	for (int d = 0; d < s->n_dims; d++)
		json_object_array_add(a, json_object_new_int64(s->dim[d]));
	return a;
}

#define ADD(o, k, v) json_object_object_add((o), (k), (v))

/* Adds to o the fields of layer l's type (node n in the model): dense's
 * units, a convolution's kernel, and so on. */
static void
add_type_fields(struct json_object *o, const struct dt_layer_spec *l,
		const struct dt_node *n)
{
	int64_t stride;

	switch (l->kind) {
	case DT_LAYER_DENSE:
		ADD(o, "units", json_object_new_int64(l->units));
		ADD(o, "bias", json_object_new_boolean(l->bias));
		if (l->tie[0] != '\0') {
			char key[DT_LAYER_NAME_MAX];

			/* no weight of its own: the embedding's */
			module_key(l->tie, key, sizeof key);
			ADD(o, "tie", json_object_new_string(key));
		}
		/* dense.c: another layer's (T, C) output maps row by row,
		 * anything else is flattened first. */
		ADD(o, "per_row", json_object_new_boolean(
			n->in_shape[0].n_dims == 2 &&
			n->inputs[0] != DT_NODE_INPUT &&
			n->in_shape[0].dim[0] > 1));
		break;
	case DT_LAYER_CONV2D:
		stride = l->stride > 0 ? l->stride : 1;
		ADD(o, "channels", json_object_new_int64(l->channels));
		ADD(o, "kernel", json_object_new_int64(l->kernel));
		ADD(o, "stride", json_object_new_int64(stride));
		ADD(o, "padding", json_object_new_int64(l->padding));
		ADD(o, "bias", json_object_new_boolean(l->bias));
		break;
	case DT_LAYER_MAXPOOL2D:
	case DT_LAYER_AVGPOOL2D:
		stride = l->stride > 0 ? l->stride : l->kernel;
		ADD(o, "kernel", json_object_new_int64(l->kernel));
		ADD(o, "stride", json_object_new_int64(stride));
		ADD(o, "padding", json_object_new_int64(l->padding));
		break;
	case DT_LAYER_DROPOUT:
		ADD(o, "rate", json_object_new_double(l->rate));
		break;
	case DT_LAYER_LAYERNORM:
		ADD(o, "eps", json_object_new_double(l->eps));
		break;
	case DT_LAYER_BATCHNORM:
		ADD(o, "eps", json_object_new_double(l->eps));
		ADD(o, "momentum", json_object_new_double(l->momentum));
		break;
	case DT_LAYER_EMBEDDING:
		ADD(o, "vocab", json_object_new_int64(l->vocab));
		ADD(o, "dim", json_object_new_int64(
			n->out_shape.dim[n->out_shape.n_dims - 1]));
		break;
	case DT_LAYER_POS_EMBEDDING:
		ADD(o, "length", json_object_new_int64(l->length));
		break;
	case DT_LAYER_ATTENTION:
		ADD(o, "heads", json_object_new_int64(l->heads));
		ADD(o, "causal", json_object_new_boolean(l->causal));
		ADD(o, "bias", json_object_new_boolean(l->bias));
		break;
	default:
		break;
	}
}

/* The layer's fields as the torch loader reads them (top of this file). */
static struct json_object *
layer_json(const struct dt_cmd_model *cm, int i)
{
	const struct dt_model *m = cm->model;
	const struct dt_layer_spec *l = &cm->job->model.layers[i];
	const struct dt_node *n = layer_node(m, i);
	struct json_object *o = json_object_new_object();
	struct json_object *ins = json_object_new_array();
	char key[DT_LAYER_NAME_MAX];

	module_key(l->name, key, sizeof key);
	ADD(o, "name", json_object_new_string(l->name));
	ADD(o, "key", json_object_new_string(key));
	ADD(o, "type", json_object_new_string(kind_word(l->kind)));
	for (int k = 0; k < n->n_inputs; k++) {
		int src = n->inputs[k];
		const char *nm = src == DT_NODE_INPUT ? "input" :
			cm->job->model.layers[m->nodes[src].layer].name;

		json_object_array_add(ins, json_object_new_string(nm));
	}
	ADD(o, "inputs", ins);
	ADD(o, "in_shape", shape_json(&n->in_shape[0]));
	ADD(o, "out_shape", shape_json(&n->out_shape));
	if (l->activation != DT_ACT_NONE)
		ADD(o, "activation",
		    json_object_new_string(dt_activation_name(l->activation)));
	add_type_fields(o, l, n);
	return o;
}

/* data.normalize's map: its kind and, per feature, the float32 shift
 * and multiplier, x' = (x * input_scale - shift) * mul in float32. */
static struct json_object *
normalize_json(const struct dt_norm *norm)
{
	struct json_object *o = json_object_new_object();
	struct json_object *shift = json_object_new_array();
	struct json_object *mul = json_object_new_array();

	for (int64_t j = 0; j < norm->n; j++) {
		json_object_array_add(shift, json_object_new_double(
			(double)norm->fshift[j]));
		json_object_array_add(mul, json_object_new_double(
			(double)norm->fmul[j]));
	}
	ADD(o, "kind", json_object_new_string(dt_norm_kind_name(norm->kind)));
	ADD(o, "shift", shift);
	ADD(o, "mul", mul);
	return o;
}

/* The graph description (top of this file) as a JSON text; heap. */
static char *
graph_json(const struct dt_cmd_model *cm)
{
	const struct dt_job *job = cm->job;
	struct json_object *o = json_object_new_object();
	struct json_object *layers = json_object_new_array();
	struct json_object *in = json_object_new_array();
	char *text;

	for (int d = 0; d < job->model.n_input_dims; d++)
		json_object_array_add(in, json_object_new_int64(
			job->model.input_shape[d]));
	ADD(o, "format", json_object_new_string("dtrain-graph"));
	ADD(o, "version", json_object_new_int(1));
	ADD(o, "input_shape", in);
	/* What data/ multiplies features by before the model sees them
	 * (none for token ids): the checkpoint's, else the job's. */
	ADD(o, "input_scale", json_object_new_double(
		cm->has_norm ? (double)(float)cm->norm.scale :
		job->data.format == DT_FORMAT_TEXT ||
		dt_job_format_token_ids(job->data.format) ||
		job->data.scale <= 0 ?
		1.0 : (double)(float)job->data.scale));
	if (cm->has_norm && cm->norm.kind != DT_NORM_NONE)
		ADD(o, "input_normalize", normalize_json(&cm->norm));
	ADD(o, "loss", json_object_new_string(
		loss_words[job->model.loss]));
	ADD(o, "output", json_object_new_string(
		job->model.layers[job->model.n_layers - 1].name));
	for (int i = 0; i < job->model.n_layers; i++)
		json_object_array_add(layers, layer_json(cm, i));
	ADD(o, "layers", layers);
	text = dt_xstrdup(json_object_to_json_string_ext(o,
		JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
	return text;
}

/* The resolved job as YAML text; heap. */
static enum dt_status
job_yaml(const struct dt_job *job, char **text, struct dt_error *err)
{
	size_t len = 0;
	FILE *f = open_memstream(text, &len);
	enum dt_status st;

	if (f == NULL)
		return dt_errorf(err, DT_ERR_IO, "open_memstream: %s",
				 strerror(errno));
	st = dt_job_write(job, f, err);
	if (fclose(f) != 0 && st == DT_OK)
		st = dt_errorf(err, DT_ERR_IO, "writing the job: %s",
			       strerror(errno));
	if (st != DT_OK) {
		free(*text);
		*text = NULL;
	}
	return st;
}

/* One tensor of the file: its torch name and shape, and where its
 * values come from: the checkpoint's tensor src (its dtrain name and
 * shape), transposed where flip. */
struct ttensor {
	char name[DT_LAYER_NAME_MAX + 32];
	int n_dims;
	int64_t shape[4];
	int64_t size;
	char src[DT_LAYER_NAME_MAX + 32];
	int64_t src_shape[4];
	int flip;
};

/* Fills t from model tensor i, renamed and laid out for torch. */
static void
torch_tensor(const struct dt_cmd_model *cm, int i, struct ttensor *t)
{
	struct dt_model *m = cm->model;
	struct dt_tensor_info ti;
	const struct dt_node *n;
	char key[DT_LAYER_NAME_MAX];
	const char *name;

	dt_model_tensor_info(m, i, &ti);
	n = &m->nodes[m->tensor_node[i]];
	module_key(cm->job->model.layers[n->layer].name, key, sizeof key);
	name = ti.name;
	t->flip = 0;
	if (n->spec.kind == DT_LAYER_DENSE && strcmp(ti.name, "weight") == 0)
		t->flip = 1;
	if (n->spec.kind == DT_LAYER_ATTENTION) {
		if (strcmp(ti.name, "qkv_weight") == 0) {
			name = "in_proj_weight";
			t->flip = 1;
		} else if (strcmp(ti.name, "qkv_bias") == 0) {
			name = "in_proj_bias";
		} else if (strcmp(ti.name, "proj_weight") == 0) {
			name = "out_proj.weight";
			t->flip = 1;
		} else if (strcmp(ti.name, "proj_bias") == 0) {
			name = "out_proj.bias";
		}
	}
	snprintf(t->name, sizeof t->name, "%s.%s", key, name);
	snprintf(t->src, sizeof t->src, "%s.%s", ti.node, ti.name);
	t->n_dims = ti.n_dims;
	t->size = ti.size;
	for (int d = 0; d < ti.n_dims; d++)
		t->shape[d] = t->src_shape[d] = ti.shape[d];
	if (t->flip) {
		t->shape[0] = ti.shape[1];
		t->shape[1] = ti.shape[0];
	}
}

struct tfile {
	struct ttensor *t;
	int n;
	const char *header;	/* the JSON header, unpadded */
	const char *ckpt;	/* the checkpoint the values come from */
};

/* n floats as little-endian bytes to f. */
static int
put_f32(FILE *f, const float *p, int64_t n)
{
	for (int64_t k = 0; k < n; k++) {
		unsigned char le[4];
		uint32_t u;

		memcpy(&u, &p[k], 4);
		for (int b = 0; b < 4; b++)
			le[b] = (unsigned char)(u >> (8 * b));
		if (fwrite(le, 1, 4, f) != 4)
			return -1;
	}
	return 0;
}

/* Tensor t's values to f: read whole from the checkpoint (any layout:
 * dt_ckpt_load_part finds it in whichever file holds it, its CRC-32
 * checked) into buf, and written as they are or, transposed, a block of
 * TBLOCK of its torch rows at a time through blk. */
enum { TBLOCK = 64 };
static enum dt_status
put_tensor(FILE *f, const struct tfile *tf, const struct ttensor *t,
	   float *buf, float *blk, struct dt_error *err)
{
	struct dt_ckpt_part part = { .name = t->src, .n_dims = t->n_dims,
				     .lo = 0, .hi = t->size, .data = buf };
	/* buf is (rows, cols); a transposed one's torch row c is its
	 * column c. */
	int64_t rows = t->src_shape[0], cols = t->n_dims > 1 ?
					       t->src_shape[1] : 1;
	enum dt_status st;

	memcpy(part.shape, t->src_shape, sizeof part.shape);
	st = dt_ckpt_load_part(tf->ckpt, 0, &part, 1, NULL, 0, err);
	if (st != DT_OK)
		return st;
	if (!t->flip) {
		if (put_f32(f, buf, t->size))
			goto fail;
		return DT_OK;
	}
	for (int64_t c0 = 0; c0 < cols; c0 += TBLOCK) {
		int64_t c1 = cols - c0 < TBLOCK ? cols : c0 + TBLOCK;

		for (int64_t c = c0; c < c1; c++)
			for (int64_t r = 0; r < rows; r++)
				blk[(c - c0) * rows + r] = buf[r * cols + c];
		if (put_f32(f, blk, (c1 - c0) * rows))
			goto fail;
	}
	return DT_OK;
fail:
	return dt_errorf(err, DT_ERR_IO, "write failed: %s", strerror(errno));
}

/* The safetensors layout (huggingface/safetensors): u64 little-endian
 * header length, the JSON header padded with spaces to a multiple of 8,
 * then the tensors' bytes back to back (little-endian F32), each read
 * from the checkpoint as it is written: one tensor in memory at a time
 * (and TBLOCK rows of a transposed one). */
static enum dt_status
write_file(FILE *f, void *ctx, struct dt_error *err)
{
	const struct tfile *tf = ctx;
	size_t len = strlen(tf->header), pad = (8 - len % 8) % 8;
	uint64_t total = len + pad;
	unsigned char le[8];
	int64_t most = 1, most_rows = 1;
	float *buf, *blk;
	enum dt_status st = DT_OK;

	for (int b = 0; b < 8; b++)
		le[b] = (unsigned char)(total >> (8 * b));
	if (fwrite(le, 1, 8, f) != 8 || fwrite(tf->header, 1, len, f) != len)
		goto fail;
	for (size_t i = 0; i < pad; i++)
		if (fputc(' ', f) == EOF)
			goto fail;
	for (int i = 0; i < tf->n; i++) {
		if (tf->t[i].size > most)
			most = tf->t[i].size;
		if (tf->t[i].flip && tf->t[i].src_shape[0] > most_rows)
			most_rows = tf->t[i].src_shape[0];
	}
	buf = dt_xalloc_floats((size_t)most);
	blk = dt_xalloc_floats((size_t)(most_rows * TBLOCK));
	for (int i = 0; i < tf->n && st == DT_OK; i++)
		st = put_tensor(f, tf, &tf->t[i], buf, blk, err);
	free(buf);
	free(blk);
	return st;
fail:
	return dt_errorf(err, DT_ERR_IO, "write failed: %s", strerror(errno));
}

enum dt_status
dt_cmd_export_torch(const char *dir, int64_t which, const char *out,
		    int64_t *step, struct dt_error *err)
{
	struct dt_cmd_model cm;
	struct json_object *h, *meta;
	struct tfile tf = { 0 };
	char *yaml = NULL, *graph = NULL, buf[32];
	int64_t off = 0;
	enum dt_status st;

	/* Shapes only: each tensor's values are read as it is written. */
	st = dt_cmd_model_open(dir, NULL, 0, which, 0, &cm, err);
	if (st != DT_OK)
		return st;
	*step = cm.step;
	st = job_yaml(cm.job, &yaml, err);
	if (st != DT_OK) {
		dt_cmd_model_close(&cm);
		return st;
	}
	graph = graph_json(&cm);
	tf.t = dt_xcalloc((size_t)dt_model_n_tensors(cm.model) + 1,
			  sizeof *tf.t);
	h = json_object_new_object();
	meta = json_object_new_object();
	snprintf(buf, sizeof buf, "%lld", (long long)cm.step);
	ADD(meta, "format", json_object_new_string("pt"));
	ADD(meta, "dtrain_format", json_object_new_string("torch-1"));
	ADD(meta, "step", json_object_new_string(buf));
	ADD(meta, "job", json_object_new_string(yaml));
	ADD(meta, "graph", json_object_new_string(graph));
	ADD(h, "__metadata__", meta);
	for (int i = 0; i < dt_model_n_tensors(cm.model) && st == DT_OK;
	     i++) {
		struct ttensor *t = &tf.t[tf.n];
		struct json_object *e, *shape, *offs;
		struct dt_tensor_info ti;

		dt_model_tensor_info(cm.model, i, &ti);
		if (ti.tie_node != NULL)
			continue;	/* the graph's "tie" names its table */
		tf.n++;
		torch_tensor(&cm, i, t);
		if (json_object_object_get_ex(h, t->name, NULL)) {
			st = dt_errorf(err, DT_ERR_USAGE, "%s: two layers give "
				       "the torch tensor %s (a layer name "
				       "with '.' and one with '_' in its "
				       "place); rename one", dir, t->name);
			break;
		}
		e = json_object_new_object();
		shape = json_object_new_array();
		offs = json_object_new_array();
		for (int d = 0; d < t->n_dims; d++)
			json_object_array_add(shape,
					      json_object_new_int64(t->shape[d]));
		json_object_array_add(offs, json_object_new_int64(off));
		off += 4 * t->size;
		json_object_array_add(offs, json_object_new_int64(off));
		ADD(e, "dtype", json_object_new_string("F32"));
		ADD(e, "shape", shape);
		ADD(e, "data_offsets", offs);
		ADD(h, t->name, e);
	}
	if (st == DT_OK) {
		tf.ckpt = cm.ckpt;
		tf.header = json_object_to_json_string_ext(h,
			JSON_C_TO_STRING_PLAIN |
			JSON_C_TO_STRING_NOSLASHESCAPE);
		st = dt_rundir_write_atomic(out, write_file, &tf, err);
	}
	json_object_put(h);
	free(tf.t);
	free(yaml);
	free(graph);
	dt_cmd_model_close(&cm);
	return st;
}

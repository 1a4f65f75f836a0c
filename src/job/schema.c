/* schema.c - the table of job-file keys (after redis's config table and
 * tmux's options table): one row per key with its type, where it lives in
 * struct dt_job, its default, its range and a line of documentation. The
 * table drives parsing, defaults, range checks, --set, dt_job_write and
 * dt_job_each_key, and a unit test holds man/dtrain-job.5 to it.
 *
 * "Did you mean" uses the optimal string alignment distance (Levenshtein
 * with adjacent transpositions), as git and many CLIs do. */
#include "job/priv.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define OFF(f) offsetof(struct dt_job, f)
#define SZ(f) sizeof(((struct dt_job *)0)->f)
#define LOFF(f) offsetof(struct dt_layer_spec, f)
#define LSZ(f) sizeof(((struct dt_layer_spec *)0)->f)

#define GE(x) .flags = DT_KEYF_MIN, .min = (x)
#define GT(x) .flags = DT_KEYF_MIN | DT_KEYF_MIN_OPEN, .min = (x)
#define UNIT_OPEN .flags = DT_KEYF_MIN | DT_KEYF_MAX | DT_KEYF_MAX_OPEN, \
	.min = 0, .max = 1

_Static_assert(sizeof(enum dt_activation) == sizeof(int) &&
	       sizeof(enum dt_layer_kind) == sizeof(int) &&
	       sizeof(enum dt_loss_kind) == sizeof(int) &&
	       sizeof(enum dt_optim_kind) == sizeof(int) &&
	       sizeof(enum dt_strategy) == sizeof(int) &&
	       sizeof(enum dt_data_format) == sizeof(int),
	       "enum keys are stored through int");

static const char *const format_names[] = { "idx", NULL };
static const char *const loss_names[] = { "softmax_cross_entropy", NULL };
static const char *const optim_names[] = { "sgd", "adam", "adamw", NULL };
static const char *const strategy_names[] = { "data", NULL };
static const char *const layer_names[] = { "dense", NULL };
/* In the order of enum dt_activation. */
static const char *const act_names[] = {
	"none", "relu", "tanh", "sigmoid", "gelu", NULL
};

const struct dt_key dt_job_schema[] = {
	{ .key = "name", .type = DT_KEY_NAME, .off = OFF(name),
	  .size = SZ(name),
	  .def_doc = "the job file's name without .yaml or .yml",
	  .doc = "name of the run: letters, digits, '.', '_' and '-'" },
	{ .key = "seed", .type = DT_KEY_UINT, .off = OFF(seed), .def = "0",
	  GE(0), .doc = "seed of every random draw (init, shuffle)" },

	{ .key = "data", .type = DT_KEY_SECTION,
	  .doc = "where the samples come from" },
	{ .key = "data.format", .type = DT_KEY_ENUM, .off = OFF(data.format),
	  .def = "idx", .names = format_names,
	  .doc = "file format of the data (IDX, as MNIST, plain or .gz)" },
	{ .key = "data.train", .type = DT_KEY_SECTION,
	  .doc = "the training split" },
	{ .key = "data.train.images", .type = DT_KEY_PATH,
	  .off = OFF(data.train.images), .size = SZ(data.train.images),
	  .flags = DT_KEYF_REQUIRED, .doc = "IDX file of training images" },
	{ .key = "data.train.labels", .type = DT_KEY_PATH,
	  .off = OFF(data.train.labels), .size = SZ(data.train.labels),
	  .flags = DT_KEYF_REQUIRED, .doc = "IDX file of training labels" },
	{ .key = "data.eval", .type = DT_KEY_SECTION,
	  .doc = "the evaluation split; give both keys or neither" },
	{ .key = "data.eval.images", .type = DT_KEY_PATH,
	  .off = OFF(data.eval.images), .size = SZ(data.eval.images),
	  .def_doc = "no evaluation", .doc = "IDX file of evaluation images" },
	{ .key = "data.eval.labels", .type = DT_KEY_PATH,
	  .off = OFF(data.eval.labels), .size = SZ(data.eval.labels),
	  .def_doc = "no evaluation", .doc = "IDX file of evaluation labels" },
	{ .key = "data.scale", .type = DT_KEY_FLOAT, .off = OFF(data.scale),
	  .def = "0.00392156862745098", GT(0),
	  .doc = "multiplier from a pixel byte to the network's input" },

	{ .key = "model", .type = DT_KEY_SECTION, .doc = "the network" },
	{ .key = "model.input_shape", .type = DT_KEY_SHAPE,
	  .off = OFF(model.input_shape), .flags = DT_KEYF_REQUIRED,
	  .doc = "shape of one sample, without the batch dimension" },
	{ .key = "model.layers", .type = DT_KEY_LAYERS,
	  .off = OFF(model.layers), .flags = DT_KEYF_REQUIRED,
	  .doc = "the layers, input to output" },
	{ .key = "model.loss", .type = DT_KEY_ENUM, .off = OFF(model.loss),
	  .def = "softmax_cross_entropy", .names = loss_names,
	  .doc = "loss on the last layer's output" },

	{ .key = "train", .type = DT_KEY_SECTION,
	  .doc = "batches, length and optimizer" },
	{ .key = "train.global_batch", .type = DT_KEY_INT,
	  .off = OFF(train.global_batch), GE(1), .def_doc = "derived",
	  .doc = "samples per optimizer step, over all ranks" },
	{ .key = "train.micro_batch", .type = DT_KEY_INT,
	  .off = OFF(train.micro_batch), GE(1), .def_doc = "derived",
	  .doc = "samples per forward/backward pass on one rank" },
	{ .key = "train.grad_accum_steps", .type = DT_KEY_INT,
	  .off = OFF(train.grad_accum_steps), GE(1), .def_doc = "derived",
	  .doc = "micro-batches summed into one optimizer step" },
	{ .key = "train.epochs", .type = DT_KEY_INT, .off = OFF(train.epochs),
	  GE(1), .def_doc = "none; give epochs or steps",
	  .doc = "passes over the training split" },
	{ .key = "train.steps", .type = DT_KEY_INT, .off = OFF(train.steps),
	  GE(1), .def_doc = "none; give epochs or steps",
	  .doc = "optimizer steps to run" },
	{ .key = "train.optimizer", .type = DT_KEY_ENUM,
	  .off = OFF(train.optimizer), .def = "sgd", .names = optim_names,
	  .doc = "update rule" },
	{ .key = "train.lr", .type = DT_KEY_FLOAT, .off = OFF(train.lr),
	  .flags = DT_KEYF_REQUIRED | DT_KEYF_MIN | DT_KEYF_MIN_OPEN,
	  .min = 0, .doc = "learning rate" },
	{ .key = "train.momentum", .type = DT_KEY_FLOAT,
	  .off = OFF(train.momentum), .def = "0", UNIT_OPEN,
	  .doc = "sgd: momentum coefficient" },
	{ .key = "train.nesterov", .type = DT_KEY_BOOL,
	  .off = OFF(train.nesterov), .def = "false",
	  .doc = "sgd: Nesterov momentum (needs momentum > 0)" },
	{ .key = "train.weight_decay", .type = DT_KEY_FLOAT,
	  .off = OFF(train.weight_decay), .def = "0", GE(0),
	  .doc = "L2 penalty (sgd, adam) or decoupled decay (adamw)" },
	{ .key = "train.beta1", .type = DT_KEY_FLOAT, .off = OFF(train.beta1),
	  .def = "0.9", UNIT_OPEN,
	  .doc = "adam, adamw: decay of the first moment" },
	{ .key = "train.beta2", .type = DT_KEY_FLOAT, .off = OFF(train.beta2),
	  .def = "0.999", UNIT_OPEN,
	  .doc = "adam, adamw: decay of the second moment" },
	{ .key = "train.eps", .type = DT_KEY_FLOAT, .off = OFF(train.eps),
	  .def = "1e-8", GT(0), .doc = "adam, adamw: added to the denominator" },

	{ .key = "parallel", .type = DT_KEY_SECTION,
	  .doc = "how ranks share the work" },
	{ .key = "parallel.strategy", .type = DT_KEY_ENUM,
	  .off = OFF(parallel.strategy), .def = "data",
	  .names = strategy_names, .doc = "parallel strategy" },
	{ .key = "parallel.data_parallel", .type = DT_KEY_INT,
	  .off = OFF(parallel.data_parallel), GE(1),
	  .def_doc = "the number of ranks", .doc = "data-parallel degree" },

	{ .key = "eval", .type = DT_KEY_SECTION, .doc = "evaluation cadence" },
	{ .key = "eval.every_steps", .type = DT_KEY_INT,
	  .off = OFF(eval.every_steps), .def = "0", GE(0),
	  .doc = "evaluate every this many steps; 0: at the end only" },

	{ .key = "log", .type = DT_KEY_SECTION, .doc = "logging cadence" },
	{ .key = "log.every_steps", .type = DT_KEY_INT,
	  .off = OFF(log.every_steps), .def = "10", GE(1),
	  .doc = "log a line every this many steps" },
};
const int dt_job_schema_len = sizeof dt_job_schema / sizeof dt_job_schema[0];

_Static_assert(sizeof dt_job_schema / sizeof dt_job_schema[0] <=
	       DT_JOB_MAX_KEYS, "grow DT_JOB_MAX_KEYS in job.h");

/* The keys of one model.layers entry, in the order of origin.layer[i]. */
const struct dt_key dt_job_layer_schema[DT_JOB_LAYER_KEYS] = {
	{ .key = "type", .type = DT_KEY_ENUM, .off = LOFF(kind),
	  .flags = DT_KEYF_REQUIRED, .names = layer_names,
	  .doc = "layer type" },
	{ .key = "units", .type = DT_KEY_INT, .off = LOFF(units),
	  .flags = DT_KEYF_REQUIRED | DT_KEYF_MIN, .min = 1,
	  .doc = "dense: output features" },
	{ .key = "activation", .type = DT_KEY_ENUM, .off = LOFF(activation),
	  .def = "none", .names = act_names,
	  .doc = "function applied to the output" },
	{ .key = "name", .type = DT_KEY_NAME, .off = LOFF(name),
	  .size = LSZ(name), .def_doc = "type and index, as dense0",
	  .doc = "name of the layer, unique in the model" },
};

int
dt_job_schema_find(const char *key)
{
	int i;

	for (i = 0; i < dt_job_schema_len; i++)
		if (strcmp(dt_job_schema[i].key, key) == 0)
			return i;
	return -1;
}

int
dt_job_layer_key_find(const char *leaf)
{
	int i;

	for (i = 0; i < DT_JOB_LAYER_KEYS; i++)
		if (strcmp(dt_job_layer_schema[i].key, leaf) == 0)
			return i;
	return -1;
}

void
dt_job_type_text(const struct dt_key *k, char *buf, size_t size)
{
	size_t o;
	int i;

	switch (k->type) {
	case DT_KEY_SECTION: snprintf(buf, size, "a mapping"); return;
	case DT_KEY_INT:
	case DT_KEY_UINT: snprintf(buf, size, "an integer"); return;
	case DT_KEY_FLOAT: snprintf(buf, size, "a number"); return;
	case DT_KEY_BOOL: snprintf(buf, size, "true or false"); return;
	case DT_KEY_NAME: snprintf(buf, size, "a name"); return;
	case DT_KEY_PATH: snprintf(buf, size, "a path"); return;
	case DT_KEY_SHAPE:
		snprintf(buf, size, "a list of 1 to %d integers",
			 DT_JOB_MAX_DIMS);
		return;
	case DT_KEY_LAYERS:
		snprintf(buf, size, "a list of layers");
		return;
	case DT_KEY_ENUM:
		break;
	}
	o = (size_t)snprintf(buf, size, "one of");
	for (i = 0; k->names[i] != NULL && o < size; i++)
		o += (size_t)snprintf(buf + o, size - o, "%s %s",
				      i ? "," : "", k->names[i]);
}

/* A bound as the table gives it; bounds are small round numbers. */
static void
bound_text(double v, char *buf, size_t size)
{
	snprintf(buf, size, "%g", v);
}

void
dt_job_range_text(const struct dt_key *k, char *buf, size_t size)
{
	char lo[32], hi[32];
	bool has_min = k->flags & DT_KEYF_MIN, has_max = k->flags & DT_KEYF_MAX;

	bound_text(k->min, lo, sizeof lo);
	bound_text(k->max, hi, sizeof hi);
	if (has_min && has_max)
		snprintf(buf, size, "in %c%s, %s%c",
			 k->flags & DT_KEYF_MIN_OPEN ? '(' : '[', lo, hi,
			 k->flags & DT_KEYF_MAX_OPEN ? ')' : ']');
	else if (has_min)
		snprintf(buf, size, "%s %s",
			 k->flags & DT_KEYF_MIN_OPEN ? ">" : ">=", lo);
	else if (has_max)
		snprintf(buf, size, "%s %s",
			 k->flags & DT_KEYF_MAX_OPEN ? "<" : "<=", hi);
	else if (size > 0)
		buf[0] = '\0';
}

#define SUGGEST_MAX 96

/* Optimal string alignment distance between a and b (both shorter than
 * SUGGEST_MAX). */
static int
osa_distance(const char *a, const char *b)
{
	static const int big = 1 << 20;
	int d[SUGGEST_MAX + 1][SUGGEST_MAX + 1];
	int la = (int)strlen(a), lb = (int)strlen(b), i, j;

	if (la > SUGGEST_MAX || lb > SUGGEST_MAX)
		return big;
	for (i = 0; i <= la; i++)
		d[i][0] = i;
	for (j = 0; j <= lb; j++)
		d[0][j] = j;
	for (i = 1; i <= la; i++) {
		for (j = 1; j <= lb; j++) {
			int cost = a[i - 1] != b[j - 1], v;

			v = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < v)
				v = d[i][j - 1] + 1;
			if (d[i - 1][j - 1] + cost < v)
				v = d[i - 1][j - 1] + cost;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] &&
			    a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < v)
				v = d[i - 2][j - 2] + 1;
			d[i][j] = v;
		}
	}
	return d[la][lb];
}

static const char *
leaf_of(const char *key)
{
	const char *dot = strrchr(key, '.');

	return dot ? dot + 1 : key;
}

/* Scores candidate cand for the unknown key: the edit distance of the whole
 * path, or 1 when only the section is wrong ("lr" for "train.lr"). */
static int
score(const char *key, const char *cand)
{
	int d = osa_distance(key, cand);

	if (d > 1 && strcmp(leaf_of(key), leaf_of(cand)) == 0)
		d = 1;
	return d;
}

void
dt_job_suggest(const char *key, char *buf, size_t size)
{
	static const char layers[] = "model.layers.";
	char cand[SUGGEST_MAX + 32], best[SUGGEST_MAX + 32] = "";
	size_t leaf_len = strlen(leaf_of(key));
	int best_d = 1 << 20, limit, i, d;
	const char *p;

	limit = leaf_len <= 3 ? 1 : leaf_len <= 6 ? 2 : 3;
	for (i = 0; i < dt_job_schema_len; i++) {
		d = score(key, dt_job_schema[i].key);
		if (d < best_d) {
			best_d = d;
			snprintf(best, sizeof best, "%s", dt_job_schema[i].key);
		}
	}
	/* Layer keys carry the index the user wrote. */
	if (strncmp(key, layers, sizeof layers - 1) == 0) {
		size_t n;

		p = key + sizeof layers - 1;
		n = strspn(p, "0123456789");
		if (n > 0 && n < 8 && p[n] == '.') {
			for (i = 0; i < DT_JOB_LAYER_KEYS; i++) {
				snprintf(cand, sizeof cand, "%s%.*s.%s", layers,
					 (int)n, p, dt_job_layer_schema[i].key);
				d = score(key, cand);
				if (d < best_d) {
					best_d = d;
					memcpy(best, cand, sizeof best);
				}
			}
		}
	}
	if (best_d > limit || best_d == 0)
		best[0] = '\0';
	snprintf(buf, size, "%s", best);
}

void
dt_job_section_keys(const char *prefix, char *buf, size_t size)
{
	size_t n = strlen(prefix), o = 0;
	int i;

	if (size > 0)
		buf[0] = '\0';
	if (strncmp(prefix, "model.layers.", 13) == 0) {
		for (i = 0; i < DT_JOB_LAYER_KEYS && o < size; i++)
			o += (size_t)snprintf(buf + o, size - o, "%s%s",
					      i ? ", " : "",
					      dt_job_layer_schema[i].key);
		return;
	}
	for (i = 0; i < dt_job_schema_len && o < size; i++) {
		const char *key = dt_job_schema[i].key, *rest = key;

		if (n > 0) {
			if (strncmp(key, prefix, n) != 0 || key[n] != '.')
				continue;
			rest = key + n + 1;
		}
		if (strchr(rest, '.') != NULL)
			continue;
		o += (size_t)snprintf(buf + o, size - o, "%s%s",
				      o ? ", " : "", rest);
	}
}

/* Writes the default of k as dt_job_each_key shows it. */
static void
default_text(const struct dt_key *k, char *buf, size_t size)
{
	if (k->def != NULL)
		snprintf(buf, size, "%s", k->def);
	else if (k->flags & DT_KEYF_REQUIRED)
		snprintf(buf, size, "required");
	else if (k->def_doc != NULL)
		snprintf(buf, size, "%s", k->def_doc);
	else
		snprintf(buf, size, "none");
}

static void
each(const struct dt_key *k, const char *key,
     void (*fn)(const char *, const char *, const char *, const char *,
		void *), void *ctx)
{
	char type[128], range[64], def[128], full[192];

	dt_job_type_text(k, type, sizeof type);
	dt_job_range_text(k, range, sizeof range);
	if (range[0] != '\0')
		snprintf(full, sizeof full, "%s %s", type, range);
	else
		snprintf(full, sizeof full, "%s", type);
	default_text(k, def, sizeof def);
	fn(key, full, def, k->doc, ctx);
}

void
dt_job_each_key(void (*fn)(const char *key, const char *type,
			   const char *def, const char *doc, void *ctx),
		void *ctx)
{
	char key[64];
	int i;

	for (i = 0; i < dt_job_schema_len; i++) {
		const struct dt_key *k = &dt_job_schema[i];
		int j;

		if (k->type == DT_KEY_SECTION)
			continue;
		each(k, k->key, fn, ctx);
		if (k->type != DT_KEY_LAYERS)
			continue;
		for (j = 0; j < DT_JOB_LAYER_KEYS; j++) {
			snprintf(key, sizeof key, "model.layers.N.%s",
				 dt_job_layer_schema[j].key);
			each(&dt_job_layer_schema[j], key, fn, ctx);
		}
	}
}

/* SPDX-License-Identifier: MIT */
/* test_ckpt.c - Check suite for src/ckpt: bit-exact save/load round trips
 * (parameters, optimizer state plain and gzip'd, metadata, job text), every
 * kind of damage detected with its reason and skipped by find-latest,
 * keep_last pruning, failed writes under a file-size limit leaving earlier
 * checkpoints intact, the reader's checks on hand-made safetensors files,
 * export/import, and numpy reading the files with no dtrain code. Each test
 * works in its own directory under one mkdtemp directory. */
#include <check.h>
#include <dirent.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ckpt/ckpt.h"
#include "util/alloc.h"

#define PYTHON "/usr/bin/python3"

static char tmpdir[512];

/* ---- a small model's state ---------------------------------------------- */

#define NP 4
#define NO 2
static const char *const p_names[NP] = { "dense0.weight", "dense0.bias",
					 "dense1.weight", "dense1.bias" };
static const int p_dims[NP] = { 2, 1, 2, 1 };
static const int64_t p_shape[NP][2] = { { 3, 4 }, { 4, 0 }, { 4, 2 },
					{ 2, 0 } };
static const size_t p_len[NP] = { 12, 4, 8, 2 };
static const char *const o_names[NO] = { "adam.m", "adam.v" };
#define N_STATE 26	/* parameters in all, the length of each optim buffer */

struct state {
	float p[NP][12];
	float o[NO][N_STATE];
};

/* Distinct values per seed; with odd, also -0, a subnormal, infinities
 * and a NaN with a payload, which must come back bit for bit. */
static void
state_fill(struct state *s, uint32_t seed, int odd)
{
	uint32_t x = seed * 2654435761u + 12345u;

	memset(s, 0, sizeof *s);
	for (int i = 0; i < NP; i++)
		for (size_t j = 0; j < p_len[i]; j++) {
			x = x * 1664525u + 1013904223u;
			s->p[i][j] = (float)(int32_t)x / 2147483648.0f;
		}
	for (int i = 0; i < NO; i++)
		for (int j = 0; j < N_STATE; j++) {
			x = x * 1664525u + 1013904223u;
			s->o[i][j] = (float)(x >> 8) * 1e-9f;
		}
	if (odd) {
		uint32_t nan_bits = 0x7fc01234u;

		s->p[0][0] = -0.0f;
		s->p[0][1] = 1e-40f;
		s->p[0][2] = INFINITY;
		s->o[1][3] = -INFINITY;
		memcpy(&s->p[2][5], &nan_bits, 4);
	}
}

static void
state_tensors(const struct state *s, struct dt_ckpt_tensor *p,
	      struct dt_ckpt_tensor *o)
{
	for (int i = 0; i < NP; i++) {
		p[i] = (struct dt_ckpt_tensor){ .name = p_names[i],
						.data = s->p[i],
						.n_dims = p_dims[i] };
		memcpy(p[i].shape, p_shape[i], sizeof p_shape[i]);
	}
	for (int i = 0; i < NO; i++)
		o[i] = (struct dt_ckpt_tensor){ .name = o_names[i],
						.data = s->o[i], .n_dims = 1,
						.shape = { N_STATE } };
}

static void
state_targets(struct state *s, struct dt_ckpt_target *p,
	      struct dt_ckpt_target *o)
{
	for (int i = 0; i < NP; i++) {
		p[i] = (struct dt_ckpt_target){ .name = p_names[i],
						.data = s->p[i],
						.n_dims = p_dims[i] };
		memcpy(p[i].shape, p_shape[i], sizeof p_shape[i]);
	}
	for (int i = 0; i < NO; i++)
		o[i] = (struct dt_ckpt_target){ .name = o_names[i],
						.data = s->o[i], .n_dims = 1,
						.shape = { N_STATE } };
}

static char job_text[] = "name: mnist\nseed: 7\ntrain:\n  lr: 0.1\n"
	"  note: \"quotes \\\" and / slashes, tabs\t, unicode \xc3\xa9\"\n";
static struct dt_ckpt_scalar extras[4];

static struct dt_ckpt_meta
meta_for(int64_t step)
{
	uint64_t nan_bits = 0x7ff8000000abcdefULL;
	struct dt_ckpt_meta m = {
		.step = step, .epoch = step / 7, .epoch_samples = step * 64,
		.optim_steps = step, .seed = 18446744073709551557ULL,
		.world_size = 4, .dp_size = 2, .pp_size = 2, .tp_size = 1,
		.job_text = job_text, .extra = extras, .n_extra = 4,
	};

	memset(extras, 0, sizeof extras);
	strcpy(extras[0].key, "loss_sum");
	extras[0].type = DT_CKPT_DOUBLE;
	extras[0].d = 0.1 * (double)step;
	strcpy(extras[1].key, "window_count");
	extras[1].type = DT_CKPT_INT64;
	extras[1].i = INT64_MIN + step;
	strcpy(extras[2].key, "minus_zero");
	extras[2].type = DT_CKPT_DOUBLE;
	extras[2].d = -0.0;
	strcpy(extras[3].key, "nan");
	extras[3].type = DT_CKPT_DOUBLE;
	memcpy(&extras[3].d, &nan_bits, 8);
	return m;
}

/* Saves the state of seed `step` as the checkpoint for step. */
static enum dt_status
save(const char *dir, int64_t step, int gz, int64_t keep,
     struct dt_error *err)
{
	struct state s;
	struct dt_ckpt_tensor p[NP], o[NO];
	struct dt_ckpt_meta m = meta_for(step);
	struct dt_ckpt_opts opts = { .keep_last = keep, .compress_optim = gz };

	state_fill(&s, (uint32_t)step, 1);
	state_tensors(&s, p, o);
	return dt_ckpt_save(dir, &opts, &m, p, NP, o, NO, err);
}

/* Loads path and checks every bit against the state saved for step. */
static void
expect_load(const char *path, int64_t step)
{
	struct state want, got;
	struct dt_ckpt_target p[NP], o[NO];
	struct dt_ckpt_meta m, w = meta_for(step);
	struct dt_error err;

	state_fill(&want, (uint32_t)step, 1);
	memset(&got, 0xa5, sizeof got);
	state_targets(&got, p, o);
	for (int i = 0; i < NP; i++)
		memset(got.p[i] + p_len[i], 0,
		       sizeof got.p[i] - p_len[i] * sizeof(float));
	ck_assert_msg(dt_ckpt_load(path, p, NP, o, NO, &m, &err) == DT_OK,
		      "%s", err.msg);
	ck_assert(memcmp(&want, &got, sizeof want) == 0);
	ck_assert_int_eq(m.step, w.step);
	ck_assert_int_eq(m.epoch, w.epoch);
	ck_assert_int_eq(m.epoch_samples, w.epoch_samples);
	ck_assert_int_eq(m.optim_steps, w.optim_steps);
	ck_assert(m.seed == w.seed);
	ck_assert_int_eq(m.world_size, 4);
	ck_assert_int_eq(m.dp_size, 2);
	ck_assert_int_eq(m.pp_size, 2);
	ck_assert_int_eq(m.tp_size, 1);
	ck_assert_str_eq(m.job_text, job_text);
	ck_assert_uint_eq(m.n_extra, w.n_extra);
	for (size_t i = 0; i < w.n_extra; i++) {
		ck_assert_str_eq(m.extra[i].key, w.extra[i].key);
		ck_assert_int_eq(m.extra[i].type, w.extra[i].type);
		ck_assert(m.extra[i].i == w.extra[i].i);
		ck_assert(memcmp(&m.extra[i].d, &w.extra[i].d, 8) == 0);
	}
	dt_ckpt_meta_fini(&m);
	ck_assert_ptr_null(m.job_text);
}

/* ---- files --------------------------------------------------------------- */

static const char *
sub(char *buf, const char *a, const char *b)
{
	ck_assert(snprintf(buf, 1024, "%s/%s%s%s", tmpdir, a, b ? "/" : "",
			   b ? b : "") < 1024);
	return buf;
}

static int
exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

static long
file_size(const char *path)
{
	struct stat st;

	ck_assert_int_eq(stat(path, &st), 0);
	return (long)st.st_size;
}

/* XORs the byte at offset (negative: from the end) with 0x01. */
static void
flip(const char *path, long offset)
{
	FILE *f = fopen(path, "r+b");
	int c;

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fseek(f, offset, offset < 0 ? SEEK_END : SEEK_SET),
			 0);
	c = fgetc(f);
	ck_assert_int_ne(c, EOF);
	ck_assert_int_eq(fseek(f, -1, SEEK_CUR), 0);
	fputc(c ^ 0x01, f);
	ck_assert_int_eq(fclose(f), 0);
}

static void
overwrite(const char *path, long offset, const char *bytes, size_t n)
{
	FILE *f = fopen(path, "r+b");

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fseek(f, offset, SEEK_SET), 0);
	ck_assert_uint_eq(fwrite(bytes, 1, n, f), n);
	ck_assert_int_eq(fclose(f), 0);
}

static void
write_bytes(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");

	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(p, 1, n, f), n);
	ck_assert_int_eq(fclose(f), 0);
}

/* Names in dir starting with '.' (temporaries left behind). */
static int
count_hidden(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] == '.' && strcmp(e->d_name, ".") != 0 &&
		    strcmp(e->d_name, "..") != 0)
			n++;
	closedir(d);
	return n;
}

static char reports[8192];

static void
collect(void *ctx, const char *line)
{
	(void)ctx;
	strncat(reports, line, sizeof reports - strlen(reports) - 2);
	strcat(reports, "\n");
}

#define ASSERT_HAS(s, needle) \
	ck_assert_msg(strstr((s), (needle)) != NULL, "\"%s\" lacks \"%s\"", \
		      (s), (needle))

/* How many times needle occurs in s (not overlapping). */
static int
times_in(const char *s, const char *needle)
{
	int n = 0;

	for (const char *at = strstr(s, needle); at != NULL;
	     at = strstr(at + strlen(needle), needle))
		n++;
	return n;
}

/* Each of the three rank files of test_load_part_damaged named exactly
 * once in msg, and no "damaged too" list unless with_too (a failed read
 * names the other damaged files after its own). */
static void
assert_named_once(const char *msg, int with_too)
{
	for (int k = 0; k < 3; k++) {
		char f[64];

		snprintf(f, sizeof f, "rank-%05d.safetensors", k);
		ck_assert_msg(times_in(msg, f) == 1, "\"%s\" names %s %d "
			      "times", msg, f, times_in(msg, f));
	}
	ck_assert_int_eq(times_in(msg, "damaged too"), with_too);
}

/* Damage done by fn to the checkpoint of step 120 in dir name must make
 * verification fail with reason, and find-latest fall back to step 100
 * after reporting the same reason. */
static void
expect_fallback(const char *name, int gz, void (*fn)(const char *ck),
		const char *reason)
{
	char dir[1024], ck[1024], want[2048], found[1024];
	struct dt_error err;
	int64_t step;

	sub(dir, name, NULL);
	ck_assert_int_eq(save(dir, 100, gz, 0, &err), DT_OK);
	ck_assert_int_eq(save(dir, 120, gz, 0, &err), DT_OK);
	sub(ck, name, "step-000000120");
	ck_assert_int_eq(dt_ckpt_verify(ck, &err), DT_OK);
	fn(ck);
	ck_assert(snprintf(want, sizeof want, "%s: %s", ck, reason) <
		  (int)sizeof want);
	ck_assert_int_eq(dt_ckpt_verify(ck, &err), DT_ERR_FORMAT);
	ASSERT_HAS(err.msg, want);
	reports[0] = '\0';
	ck_assert_int_eq(dt_ckpt_find_latest(dir, found, sizeof found, &step,
					     collect, NULL, &err), DT_OK);
	ck_assert_int_eq(step, 100);
	ASSERT_HAS(found, "step-000000100");
	ASSERT_HAS(reports, want);
	expect_load(found, 100);
}

/* ---- round trips --------------------------------------------------------- */

START_TEST(test_roundtrip)
{
	char dir[1024], ck[1024], f[1024], found[1024];
	struct dt_error err;
	int64_t step = 0;

	sub(dir, "roundtrip", NULL);
	ck_assert_msg(save(dir, 120, 0, 0, &err) == DT_OK, "%s", err.msg);
	sub(ck, "roundtrip", "step-000000120");
	ck_assert(exists(sub(f, "roundtrip/step-000000120",
			     "params.safetensors")));
	ck_assert(exists(sub(f, "roundtrip/step-000000120",
			     "optim.safetensors")));
	ck_assert(exists(sub(f, "roundtrip/step-000000120", "meta.json")));
	ck_assert(exists(sub(f, "roundtrip/step-000000120",
			     "MANIFEST.json")));
	ck_assert_int_eq(count_hidden(dir), 0);
	ck_assert_msg(dt_ckpt_verify(ck, &err) == DT_OK, "%s", err.msg);
	expect_load(ck, 120);
	ck_assert_int_eq(dt_ckpt_find_latest(dir, found, sizeof found, &step,
					     NULL, NULL, &err), DT_OK);
	ck_assert_str_eq(found, ck);
	ck_assert_int_eq(step, 120);
}
END_TEST

START_TEST(test_roundtrip_gzip)
{
	char dir[1024], ck[1024], f[1024];
	unsigned char magic[2];
	struct dt_error err;
	FILE *in;

	sub(dir, "gzip", NULL);
	ck_assert_msg(save(dir, 7, 1, 0, &err) == DT_OK, "%s", err.msg);
	sub(ck, "gzip", "step-000000007");
	ck_assert(!exists(sub(f, "gzip/step-000000007", "optim.safetensors")));
	in = fopen(sub(f, "gzip/step-000000007", "optim.safetensors.gz"),
		   "rb");
	ck_assert_ptr_nonnull(in);
	ck_assert_uint_eq(fread(magic, 1, 2, in), 2);
	fclose(in);
	ck_assert(magic[0] == 0x1f && magic[1] == 0x8b);
	expect_load(ck, 7);
}
END_TEST

/* Plain SGD has no optimizer state: an empty tensor file. */
START_TEST(test_roundtrip_no_optim)
{
	char dir[1024], ck[1024];
	struct state s, got;
	struct dt_ckpt_tensor p[NP], o[NO];
	struct dt_ckpt_target pt[NP], ot[NO];
	struct dt_ckpt_meta m = meta_for(0), back;
	struct dt_error err;

	sub(dir, "sgd", NULL);
	state_fill(&s, 3, 0);
	state_tensors(&s, p, o);
	ck_assert_msg(dt_ckpt_save(dir, NULL, &m, p, NP, NULL, 0, &err) ==
		      DT_OK, "%s", err.msg);
	sub(ck, "sgd", "step-000000000");
	memset(&got, 0, sizeof got);
	state_targets(&got, pt, ot);
	ck_assert_msg(dt_ckpt_load(ck, pt, NP, NULL, 0, &back, &err) == DT_OK,
		      "%s", err.msg);
	ck_assert(memcmp(s.p, got.p, sizeof s.p) == 0);
	dt_ckpt_meta_fini(&back);
	/* Asking for optimizer state that is not there names it. */
	ck_assert_int_eq(dt_ckpt_load(ck, pt, NP, ot, NO, &back, &err),
			 DT_ERR_FORMAT);
	ASSERT_HAS(err.msg, "optim.safetensors: no tensor named adam.m");
	ck_assert_ptr_null(back.job_text);
}
END_TEST

START_TEST(test_replace_same_step)
{
	char dir[1024], ck[1024];
	struct state s;
	struct dt_ckpt_tensor p[NP], o[NO];
	struct dt_ckpt_meta m = meta_for(50);
	struct dt_error err;

	sub(dir, "replace", NULL);
	state_fill(&s, 999, 0);
	state_tensors(&s, p, o);
	ck_assert_int_eq(dt_ckpt_save(dir, NULL, &m, p, NP, o, NO, &err),
			 DT_OK);
	ck_assert_int_eq(save(dir, 50, 0, 0, &err), DT_OK);
	sub(ck, "replace", "step-000000050");
	expect_load(ck, 50);
	ck_assert_int_eq(count_hidden(dir), 0);
}
END_TEST

START_TEST(test_load_mismatch)
{
	char dir[1024], ck[1024];
	struct state s;
	struct dt_ckpt_target p[NP], o[NO];
	struct dt_ckpt_meta m;
	struct dt_error err;

	sub(dir, "mismatch", NULL);
	ck_assert_int_eq(save(dir, 1, 0, 0, &err), DT_OK);
	sub(ck, "mismatch", "step-000000001");
	state_targets(&s, p, o);
	p[0].shape[0] = 4;
	p[0].shape[1] = 3;
	ck_assert_int_eq(dt_ckpt_load(ck, p, NP, o, NO, &m, &err),
			 DT_ERR_FORMAT);
	ASSERT_HAS(err.msg, "params.safetensors: tensor dense0.weight has "
		   "shape [3, 4], the model expects [4, 3]");
	state_targets(&s, p, o);
	ck_assert_int_eq(dt_ckpt_load(ck, p, NP - 1, o, NO, &m, &err),
			 DT_ERR_FORMAT);
	ASSERT_HAS(err.msg, "holds tensor dense1.bias, which the model does "
		   "not have");
	p[1].name = "dense0.b";
	ck_assert_int_eq(dt_ckpt_load(ck, p, NP, o, NO, &m, &err),
			 DT_ERR_FORMAT);
	ASSERT_HAS(err.msg, "dense0.bias");
}
END_TEST

START_TEST(test_bad_save_input)
{
	char dir[1024];
	struct state s;
	struct dt_ckpt_tensor p[NP], o[NO];
	struct dt_ckpt_meta m = meta_for(5);
	struct dt_error err;

	sub(dir, "badinput", NULL);
	state_fill(&s, 1, 0);
	state_tensors(&s, p, o);
	p[3].name = "dense0.bias";
	ck_assert_int_eq(dt_ckpt_save(dir, NULL, &m, p, NP, o, NO, &err),
			 DT_ERR_FORMAT);
	ASSERT_HAS(err.msg, "dense0.bias appears twice");
	state_tensors(&s, p, o);
	m.epoch = -1;
	ck_assert_int_eq(dt_ckpt_save(dir, NULL, &m, p, NP, o, NO, &err),
			 DT_ERR_FORMAT);
	m = meta_for(5);
	strcpy(extras[1].key, "loss_sum");
	ck_assert_int_eq(dt_ckpt_save(dir, NULL, &m, p, NP, o, NO, &err),
			 DT_ERR_FORMAT);
	ASSERT_HAS(err.msg, "loss_sum appears twice");
	ck_assert(!exists(dir));
}
END_TEST

/* ---- damage -------------------------------------------------------------- */

static char path_buf[1024];

static const char *
in_ck(const char *ck, const char *name)
{
	ck_assert(snprintf(path_buf, sizeof path_buf, "%s/%s", ck, name) <
		  (int)sizeof path_buf);
	return path_buf;
}

/* The first data byte of dense0.weight, right after the header. */
static void
damage_params_data(const char *ck)
{
	unsigned char len[8];
	FILE *f = fopen(in_ck(ck, "params.safetensors"), "rb");

	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fread(len, 1, 8, f), 8);
	fclose(f);
	flip(path_buf, 8 + (long)len[0] + 256L * len[1]);
}

static void
damage_optim_data(const char *ck)
{
	flip(in_ck(ck, "optim.safetensors"), -1);
}

static void
damage_gzip(const char *ck)
{
	const char *p = in_ck(ck, "optim.safetensors.gz");

	flip(p, file_size(p) / 2);
}

static void
damage_truncate(const char *ck)
{
	const char *p = in_ck(ck, "params.safetensors");

	ck_assert_int_eq(truncate(p, file_size(p) - 5), 0);
}

static void
damage_manifest(const char *ck)
{
	ck_assert_int_eq(unlink(in_ck(ck, "MANIFEST.json")), 0);
}

static void
damage_header(const char *ck)
{
	overwrite(in_ck(ck, "params.safetensors"), 8, "garbage!", 8);
}

static void
damage_meta(const char *ck)
{
	const char *p = in_ck(ck, "meta.json");

	ck_assert_int_eq(truncate(p, 0), 0);
}

START_TEST(test_flip_params)
{
	expect_fallback("flip_params", 0, damage_params_data,
			"params.safetensors: crc32 mismatch for "
			"dense0.weight");
}
END_TEST

START_TEST(test_flip_optim)
{
	expect_fallback("flip_optim", 0, damage_optim_data,
			"optim.safetensors: crc32 mismatch for adam.v");
}
END_TEST

START_TEST(test_flip_gzip)
{
	expect_fallback("flip_gzip", 1, damage_gzip,
			"optim.safetensors.gz: ");
}
END_TEST

START_TEST(test_truncated)
{
	expect_fallback("truncated", 0, damage_truncate,
			"params.safetensors: ");
	ASSERT_HAS(reports, "lists");
	ASSERT_HAS(reports, "(truncated)");
}
END_TEST

START_TEST(test_missing_manifest)
{
	expect_fallback("nomanifest", 0, damage_manifest,
			"MANIFEST.json: missing");
}
END_TEST

START_TEST(test_garbage_header)
{
	expect_fallback("garbage", 0, damage_header,
			"params.safetensors: header");
}
END_TEST

START_TEST(test_damaged_meta)
{
	expect_fallback("meta", 0, damage_meta, "meta.json: 0 bytes");
}
END_TEST

/* Every file the manifest lists is checked, also ones dtrain does not
 * read (a later version may add some). */
START_TEST(test_manifest_other_file)
{
	static const char entry[] = "{ \"name\": \"notes.txt\", \"size\": 3, "
		"\"crc32\": \"%s\" }, ";
	char ck[1024], f[1024], text[8192], out[9000], e[128];
	struct dt_error err;
	FILE *in;
	size_t n;
	char *files;

	ck_assert_int_eq(save(sub(f, "other", NULL), 1, 0, 0, &err), DT_OK);
	sub(ck, "other", "step-000000001");
	in = fopen(in_ck(ck, "MANIFEST.json"), "r");
	ck_assert_ptr_nonnull(in);
	n = fread(text, 1, sizeof text - 1, in);
	fclose(in);
	text[n] = '\0';
	files = strchr(text, '[');
	ck_assert_ptr_nonnull(files);
	snprintf(e, sizeof e, entry, "352441c2");	/* crc32("abc") */
	snprintf(out, sizeof out, "%.*s%s%s", (int)(files + 1 - text), text,
		 e, files + 1);
	write_bytes(in_ck(ck, "MANIFEST.json"), out, strlen(out));
	ck_assert_int_eq(dt_ckpt_verify(ck, &err), DT_ERR_FORMAT);
	ASSERT_HAS(err.msg, "notes.txt: cannot open");
	write_bytes(in_ck(ck, "notes.txt"), "abc", 3);
	ck_assert_msg(dt_ckpt_verify(ck, &err) == DT_OK, "%s", err.msg);
	write_bytes(in_ck(ck, "notes.txt"), "abd", 3);
	ck_assert_int_eq(dt_ckpt_verify(ck, &err), DT_ERR_FORMAT);
	ASSERT_HAS(err.msg, "notes.txt: crc32 of the file is");
}
END_TEST

START_TEST(test_find_none)
{
	char dir[1024], ck[1024], found[1024], junk[1024];
	struct dt_error err;
	int64_t step = 5;

	sub(dir, "none", NULL);
	ck_assert_int_eq(dt_ckpt_find_latest(dir, found, sizeof found, &step,
					     collect, NULL, &err), DT_OK);
	ck_assert_int_eq(step, -1);
	ck_assert_str_eq(found, "");
	ck_assert_int_eq(mkdir(dir, 0777), 0);
	/* Temporaries and other names are not checkpoints. */
	ck_assert_int_eq(mkdir(sub(junk, "none",
				   ".step-000000200.tmp.999"), 0777), 0);
	ck_assert_int_eq(mkdir(sub(junk, "none", "step-12"), 0777), 0);
	ck_assert_int_eq(mkdir(sub(junk, "none", "notes"), 0777), 0);
	reports[0] = '\0';
	ck_assert_int_eq(dt_ckpt_find_latest(dir, found, sizeof found, &step,
					     collect, NULL, &err), DT_OK);
	ck_assert_int_eq(step, -1);
	ck_assert_str_eq(reports, "");
	/* Checkpoints, none valid: an error unlike "none at all". */
	ck_assert_int_eq(save(dir, 10, 0, 0, &err), DT_OK);
	ck_assert_int_eq(save(dir, 20, 0, 0, &err), DT_OK);
	damage_manifest(sub(ck, "none", "step-000000010"));
	damage_optim_data(sub(ck, "none", "step-000000020"));
	ck_assert_int_eq(dt_ckpt_find_latest(dir, found, sizeof found, &step,
					     collect, NULL, &err),
			 DT_ERR_FORMAT);
	ck_assert_int_eq(step, -1);
	ASSERT_HAS(err.msg, "none of the 2 checkpoints is valid");
	ASSERT_HAS(err.msg, "step-000000020: optim.safetensors: crc32");
	ASSERT_HAS(reports, "step-000000020: optim.safetensors: crc32");
	ASSERT_HAS(reports, "step-000000010: MANIFEST.json: missing");
	ck_assert(strstr(reports, "step-000000020") <
		  strstr(reports, "step-000000010"));
}
END_TEST

/* ---- pruning -------------------------------------------------------------- */

START_TEST(test_keep_last)
{
	char dir[1024], ck[1024];
	struct dt_error err;

	sub(dir, "keep", NULL);
	for (int64_t s = 10; s <= 50; s += 10)
		ck_assert_int_eq(save(dir, s, 0, 2, &err), DT_OK);
	ck_assert(!exists(sub(ck, "keep", "step-000000010")));
	ck_assert(!exists(sub(ck, "keep", "step-000000030")));
	ck_assert(exists(sub(ck, "keep", "step-000000040")));
	expect_load(sub(ck, "keep", "step-000000050"), 50);
	/* A directory without a manifest is not a complete checkpoint: it
	 * goes, and the complete one before it stays. */
	damage_manifest(sub(ck, "keep", "step-000000050"));
	ck_assert_int_eq(save(dir, 60, 0, 3, &err), DT_OK);
	ck_assert(!exists(sub(ck, "keep", "step-000000050")));
	ck_assert(exists(sub(ck, "keep", "step-000000040")));
	/* keep_last 0 keeps everything; newer steps are never touched. */
	ck_assert_int_eq(save(dir, 55, 0, 0, &err), DT_OK);
	ck_assert(exists(sub(ck, "keep", "step-000000040")));
	ck_assert_int_eq(save(dir, 45, 0, 1, &err), DT_OK);
	ck_assert(exists(sub(ck, "keep", "step-000000060")));
	ck_assert(exists(sub(ck, "keep", "step-000000055")));
	ck_assert(exists(sub(ck, "keep", "step-000000045")));
	ck_assert(!exists(sub(ck, "keep", "step-000000040")));
	/* Pruning leaves nothing behind under any name. */
	ck_assert_int_eq(count_hidden(dir), 0);
}
END_TEST

/* What a kill in the middle of pruning leaves under this version (a
 * directory already renamed to .step-N.tmp.prune.PID) is removed by the
 * start of the next run, and named; a step-N directory without its
 * manifest (an older version's prune, or a manifest lost) loses its step
 * name but keeps its files (step-N.no-manifest; removed when empty);
 * complete checkpoints stay. */
START_TEST(test_clean_half_pruned)
{
	char dir[1024], ck[1024], f[1100];
	struct dt_error err;

	sub(dir, "halfpruned", NULL);
	ck_assert_int_eq(save(dir, 10, 0, 0, &err), DT_OK);
	ck_assert_int_eq(save(dir, 20, 0, 0, &err), DT_OK);
	ck_assert_int_eq(mkdir(sub(ck, "halfpruned", "step-000000005"), 0777),
			 0);
	ck_assert_int_eq(mkdir(sub(ck, "halfpruned",
				   ".step-000000001.tmp.prune.77"), 0777), 0);
	ck_assert_int_eq(mkdir(sub(ck, "halfpruned", "step-000000007"), 0777),
			 0);
	snprintf(f, sizeof f, "%s/params.safetensors", ck);
	{
		FILE *fp = fopen(f, "w");

		ck_assert_ptr_nonnull(fp);
		fputs("half", fp);
		fclose(fp);
	}
	reports[0] = '\0';
	ck_assert_int_eq(dt_ckpt_clean_temporaries(dir, collect, NULL, &err),
			 DT_OK);
	ck_assert(!exists(sub(ck, "halfpruned", "step-000000005")));
	ck_assert(!exists(sub(ck, "halfpruned", "step-000000005.no-manifest")));
	ck_assert(!exists(sub(ck, "halfpruned", "step-000000007")));
	ck_assert(exists(sub(ck, "halfpruned",
			     "step-000000007.no-manifest/params.safetensors")));
	ck_assert_int_eq(count_hidden(dir), 0);
	ck_assert_ptr_nonnull(strstr(reports, "step-000000005: removed an "
				     "empty step directory"));
	ck_assert_ptr_nonnull(strstr(reports, "step-000000007: no "
				     "MANIFEST.json, so not a checkpoint; its "
				     "files set aside in "));
	/* A second one of the same step takes the next free name. */
	ck_assert_int_eq(mkdir(sub(ck, "halfpruned", "step-000000007"), 0777),
			 0);
	ck_assert_int_eq(mkdir(sub(ck, "halfpruned", "step-000000007/x"),
			       0777), 0);
	ck_assert_int_eq(dt_ckpt_clean_temporaries(dir, collect, NULL, &err),
			 DT_OK);
	ck_assert(!exists(sub(ck, "halfpruned", "step-000000007")));
	ck_assert(exists(sub(ck, "halfpruned",
			     "step-000000007.no-manifest/params.safetensors")));
	ck_assert(exists(sub(ck, "halfpruned",
			     "step-000000007.no-manifest.1/x")));
	expect_load(sub(ck, "halfpruned", "step-000000010"), 10);
	expect_load(sub(ck, "halfpruned", "step-000000020"), 20);
}
END_TEST

/* ---- failed writes -------------------------------------------------------- */

#define BIG 4096

/* In a child under RLIMIT_FSIZE = limit (SIGXFSZ ignored, so write fails
 * with EFBIG): saving step 20 must fail with DT_ERR_IO naming the file. */
static void
save_big_limited(const char *dir, rlim_t limit, int gz)
{
	pid_t pid = fork();
	int status;

	ck_assert_int_ne(pid, -1);
	if (pid == 0) {
		struct rlimit rl = { limit, limit };
		float *p = dt_xalloc_floats(BIG), *m = dt_xalloc_floats(BIG);
		float *v = dt_xalloc_floats(BIG);
		struct dt_ckpt_tensor t = { "big", p, 1, { BIG } };
		struct dt_ckpt_tensor o[2] = { { "m", m, 1, { BIG } },
					       { "v", v, 1, { BIG } } };
		struct dt_ckpt_meta meta = meta_for(20);
		struct dt_ckpt_opts opts = { .compress_optim = gz };
		struct dt_error err;
		enum dt_status st;

		uint32_t x = 1;

		/* Random bits, so that gzip cannot shrink them much. */
		for (int i = 0; i < BIG; i++) {
			x = x * 1664525u + 1013904223u;
			p[i] = (float)(int32_t)x / 3e9f;
			m[i] = p[i] * 0.5f;
			v[i] = p[i] * p[i];
		}
		signal(SIGXFSZ, SIG_IGN);
		if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
			_exit(3);
		st = dt_ckpt_save(dir, &opts, &meta, &t, 1, o, 2, &err);
		if (st != DT_ERR_IO) {
			fprintf(stderr, "limit %lu: status %d: %s\n",
				(unsigned long)limit, (int)st, err.msg);
			_exit(1);
		}
		if (strstr(err.msg, ".step-000000020.tmp.") == NULL ||
		    strstr(err.msg, "File too large") == NULL) {
			fprintf(stderr, "limit %lu: %s\n",
				(unsigned long)limit, err.msg);
			_exit(2);
		}
		_exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 0);
}

START_TEST(test_write_failure)
{
	/* 1: the params header; 1000: params data; 20000: optimizer state
	 * (params.safetensors is about 16.5 kB, optim about 33 kB). */
	static const rlim_t limits[] = { 1, 1000, 20000 };
	char dir[1024], found[1024];
	struct dt_error err;
	int64_t step;

	sub(dir, "fsize", NULL);
	ck_assert_int_eq(save(dir, 10, 0, 1, &err), DT_OK);
	for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++) {
		save_big_limited(dir, limits[i], 0);
		ck_assert_int_eq(count_hidden(dir), 0);
	}
	save_big_limited(dir, 20000, 1);
	ck_assert_int_eq(count_hidden(dir), 0);
	ck_assert_int_eq(dt_ckpt_find_latest(dir, found, sizeof found, &step,
					     NULL, NULL, &err), DT_OK);
	ck_assert_int_eq(step, 10);
	expect_load(found, 10);
}
END_TEST

START_TEST(test_unwritable_dir)
{
	char dir[1024];
	struct dt_error err;

	sub(dir, "no/such/parent", NULL);
	ck_assert_int_eq(save(dir, 1, 0, 0, &err), DT_ERR_IO);
	ASSERT_HAS(err.msg, "no/such/parent");
}
END_TEST

/* ---- single safetensors files --------------------------------------------- */

START_TEST(test_export_import)
{
	char path[1024], bad[1024];
	struct state s, got;
	struct dt_ckpt_tensor p[NP], o[NO];
	struct dt_ckpt_target pt[NP], ot[NO];
	struct dt_error err;

	ck_assert_int_eq(mkdir(sub(path, "export", NULL), 0777), 0);
	sub(path, "export", "model.safetensors");
	state_fill(&s, 77, 1);
	state_tensors(&s, p, o);
	ck_assert_msg(dt_ckpt_export(path, p, NP, &err) == DT_OK, "%s",
		      err.msg);
	memset(&got, 0, sizeof got);
	state_targets(&got, pt, ot);
	ck_assert_msg(dt_ckpt_import(path, pt, NP, &err) == DT_OK, "%s",
		      err.msg);
	ck_assert(memcmp(s.p, got.p, sizeof s.p) == 0);
	ck_assert_int_eq(count_hidden(sub(bad, "export", NULL)), 0);
	ck_assert_int_eq(dt_ckpt_export(sub(bad, "export/none", "m"), p, NP,
					&err), DT_ERR_IO);
	ASSERT_HAS(err.msg, "export/none/m.tmp.");
	flip(path, -2);
	ck_assert_int_eq(dt_ckpt_import(path, pt, NP, &err), DT_ERR_FORMAT);
	ASSERT_HAS(err.msg, "crc32 mismatch for dense1.bias");
}
END_TEST

/* A sharded checkpoint of two stage files (ckpt.h): exported into one
 * file with the parameters' values, and where both stage files hold the
 * same tensor (a damaged or forged checkpoint whose sizes and CRCs the
 * manifest still matches) the export is refused naming both files and
 * the tensor, leaving nothing at out, as dt_ckpt_load_params refuses it
 * (the old export wrote a header listing the name twice). */
static void
shard_save(const char *dir, int64_t step, const struct dt_ckpt_tensor *p,
	   size_t n0, size_t from1)
{
	struct dt_ckpt_shard_file f[2];
	struct dt_ckpt_meta m = meta_for(step);
	char tmp[1024];
	struct dt_error err;

	ck_assert_msg(dt_ckpt_shard_begin(dir, step, tmp, sizeof tmp, &err) ==
		      DT_OK, "%s", err.msg);
	ck_assert_msg(dt_ckpt_shard_write(tmp, "params-stage-000.safetensors",
					  p, n0, &f[0], &err) == DT_OK, "%s",
		      err.msg);
	ck_assert_msg(dt_ckpt_shard_write(tmp, "params-stage-001.safetensors",
					  p + from1, NP - from1, &f[1],
					  &err) == DT_OK, "%s", err.msg);
	ck_assert_msg(dt_ckpt_shard_finish(dir, tmp, NULL, &m, f, 2, &err) ==
		      DT_OK, "%s", err.msg);
}

START_TEST(test_export_shards)
{
	char dir[1024], ck[1024], out[1024];
	struct state s, got;
	struct dt_ckpt_tensor p[NP], o[NO];
	struct dt_ckpt_target pt[NP], ot[NO];
	struct dt_error err;

	state_fill(&s, 31, 0);
	state_tensors(&s, p, o);
	sub(dir, "shards", NULL);
	shard_save(dir, 3, p, 2, 2);
	sub(ck, "shards", "step-000000003");
	ck_assert_int_eq(dt_ckpt_is_sharded(ck), 1);
	sub(out, "shards", "whole.safetensors");
	ck_assert_msg(dt_ckpt_export_ckpt(ck, out, &err) == DT_OK, "%s",
		      err.msg);
	memset(&got, 0, sizeof got);
	state_targets(&got, pt, ot);
	ck_assert_msg(dt_ckpt_import(out, pt, NP, &err) == DT_OK, "%s",
		      err.msg);
	ck_assert(memcmp(s.p, got.p, sizeof s.p) == 0);

	/* dense0.bias in both stage files */
	shard_save(dir, 4, p, 2, 1);
	sub(ck, "shards", "step-000000004");
	sub(out, "shards", "twice.safetensors");
	ck_assert_int_eq(dt_ckpt_export_ckpt(ck, out, &err), DT_ERR_FORMAT);
	ASSERT_HAS(err.msg, "step-000000004: params-stage-000.safetensors "
		   "and params-stage-001.safetensors: both hold tensor "
		   "dense0.bias");
	ck_assert(!exists(out));
	ck_assert_int_eq(count_hidden(dir), 0);
	ck_assert_int_eq(dt_ckpt_load_params(ck, pt, NP, &err),
			 DT_ERR_FORMAT);
	ASSERT_HAS(err.msg, "tensor dense0.bias is in two files");
}
END_TEST

/* One rank's own part of a sharded checkpoint (dt_ckpt_load_part): the
 * parameters in params.safetensors, adam.m's 26 floats in two rank files
 * (spans [0:10] and [10:26]). A range of a tensor, a whole one (its CRC
 * checked) and a span that crosses both rank files come back with their
 * values; a range that one file holds needs nothing of the other. The
 * rank file truncated: a rank needing its floats is refused naming the
 * file, the rank and the span, one that needs only the other file's is
 * not; the file removed: named as missing with its manifest size, and
 * the rank that needed it. A byte of a tensor read whole flipped: its
 * CRC mismatch, naming the tensor and the rank. */
START_TEST(test_load_part)
{
	char dir[1024], ck[1024], tmp[1024], f1[1024];
	struct state s;
	struct dt_ckpt_tensor p[NP], o[NO], sp[2];
	struct dt_ckpt_shard_file f[3];
	struct dt_ckpt_meta m = meta_for(6);
	float w[12], bias[2], part[9];
	struct dt_ckpt_part parts[2] = {
		{ .name = "dense0.weight", .n_dims = 2, .shape = { 3, 4 },
		  .lo = 5, .hi = 11, .data = w },
		{ .name = "dense1.bias", .n_dims = 1, .shape = { 2 },
		  .lo = 0, .hi = 2, .data = bias },
	};
	struct dt_ckpt_span span = { "adam.m", 6, 15, part };
	struct dt_error err;

	state_fill(&s, 11, 0);
	state_tensors(&s, p, o);
	sp[0] = (struct dt_ckpt_tensor){ .name = "adam.m[0:10]",
					 .data = s.o[0], .n_dims = 1,
					 .shape = { 10 } };
	sp[1] = (struct dt_ckpt_tensor){ .name = "adam.m[10:26]",
					 .data = s.o[0] + 10, .n_dims = 1,
					 .shape = { 16 } };
	sub(dir, "part", NULL);
	ck_assert(dt_ckpt_shard_begin(dir, 6, tmp, sizeof tmp, &err) == DT_OK);
	ck_assert(dt_ckpt_shard_write(tmp, "params.safetensors", p, NP, &f[0],
				      &err) == DT_OK);
	ck_assert(dt_ckpt_shard_write(tmp, "rank-00000.safetensors", sp, 1,
				      &f[1], &err) == DT_OK);
	ck_assert(dt_ckpt_shard_write(tmp, "rank-00001.safetensors", sp + 1,
				      1, &f[2], &err) == DT_OK);
	ck_assert_msg(dt_ckpt_shard_finish(dir, tmp, NULL, &m, f, 3, &err) ==
		      DT_OK, "%s", err.msg);
	sub(ck, "part", "step-000000006");
	ck_assert_msg(dt_ckpt_load_part(ck, 3, parts, 2, &span, 1, &err) ==
		      DT_OK, "%s", err.msg);
	ck_assert(memcmp(w, s.p[0] + 5, 6 * sizeof(float)) == 0);
	ck_assert(memcmp(bias, s.p[3], 2 * sizeof(float)) == 0);
	ck_assert(memcmp(part, s.o[0] + 6, 9 * sizeof(float)) == 0);

	sub(f1, "part", "step-000000006/rank-00001.safetensors");
	ck_assert_int_eq(truncate(f1, file_size(f1) - 8), 0);
	ck_assert_int_eq(dt_ckpt_load_part(ck, 3, NULL, 0, &span, 1, &err),
			 DT_ERR_FORMAT);
	ASSERT_HAS(err.msg, "step-000000006: rank 3 needs float 10 of adam.m, "
		   "which no readable file holds: rank-00001.safetensors: 208 "
		   "bytes, MANIFEST.json lists 216 (truncated)");
	span.hi = 10;
	ck_assert_msg(dt_ckpt_load_part(ck, 2, NULL, 0, &span, 1, &err) ==
		      DT_OK, "%s", err.msg);
	ck_assert(memcmp(part, s.o[0] + 6, 4 * sizeof(float)) == 0);
	span.hi = 15;
	ck_assert_int_eq(unlink(f1), 0);
	ck_assert_int_eq(dt_ckpt_load_part(ck, 1, NULL, 0, &span, 1, &err),
			 DT_ERR_FORMAT);
	ASSERT_HAS(err.msg, "step-000000006: rank 1 needs float 10 of adam.m, "
		   "which no readable file holds: rank-00001.safetensors: "
		   "missing; MANIFEST.json lists it with");

	sub(f1, "part", "step-000000006/params.safetensors");
	flip(f1, -1);
	ck_assert_int_eq(dt_ckpt_load_part(ck, 0, parts + 1, 1, NULL, 0, &err),
			 DT_ERR_FORMAT);
	ASSERT_HAS(err.msg, "params.safetensors: crc32 mismatch for "
		   "dense1.bias (rank 0 read it)");
	/* A range of that tensor cannot be checked by its CRC. */
	parts[1].hi = 1;
	ck_assert_msg(dt_ckpt_load_part(ck, 0, parts + 1, 1, NULL, 0, &err) ==
		      DT_OK, "%s", err.msg);
	ck_assert(memcmp(bias, s.p[3], sizeof(float)) == 0);
}
END_TEST

/* The CRC-32 (IEEE 802.3, reflected, as zlib and MANIFEST.json give it)
 * of the file at path, worked out bit by bit here. */
static unsigned
file_crc(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint32_t c = 0xffffffffu;
	int b;

	ck_assert_ptr_nonnull(f);
	while ((b = getc(f)) != EOF) {
		c ^= (uint32_t)b;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? c >> 1 ^ 0xedb88320u : c >> 1;
	}
	fclose(f);
	return (unsigned)(c ^ 0xffffffffu);
}

/* Damage to two or more files of a sharded checkpoint, in one error each
 * time (dt_ckpt_load_part, dt_ckpt_check_params). adam.m's 26 floats in
 * three rank files (spans [0:10], [10:20], [20:26]); a rank asking for
 * [6, 24), which all three hold parts of:
 * - the first truncated by 8 bytes (its header no longer reads) and the
 *   third removed: both named, each with the size and CRC-32 the
 *   manifest lists (the old code named the first alone, without CRC);
 * - the second made a directory, then a FIFO: said so, with what the
 *   manifest lists, not "0 bytes (truncated)" (the old message);
 * - a tensor read whole whose CRC fails, with the third file missing:
 *   the CRC mismatch, then the missing file named too.
 * Each damaged file is named once: the old code, once a good file had
 * been read, took that file for the failed one and named the damaged
 * files a second time after "damaged too".
 * Two parameter files (stage 0 and 1) both truncated: check_params names
 * both. */
START_TEST(test_load_part_damaged)
{
	char dir[1024], ck[1024], tmp[1024], fn[3][1024], want[1024];
	const char *names[3] = { "step-000000007/rank-00000.safetensors",
				 "step-000000007/rank-00001.safetensors",
				 "step-000000007/rank-00002.safetensors" };
	long size[3];
	unsigned crc[3];
	struct state s;
	struct dt_ckpt_tensor p[NP], o[NO], sp[3];
	struct dt_ckpt_target pt[NP], ot[NO];
	struct dt_ckpt_shard_file f[4];
	struct dt_ckpt_meta m = meta_for(7);
	float part[18], bias[2];
	struct dt_ckpt_part whole = { .name = "dense1.bias", .n_dims = 1,
				      .shape = { 2 }, .lo = 0, .hi = 2,
				      .data = bias };
	struct dt_ckpt_span span = { "adam.m", 6, 24, part };
	struct dt_error err;

	state_fill(&s, 13, 0);
	state_tensors(&s, p, o);
	for (int i = 0; i < 3; i++) {
		static char sn[3][32];
		int lo = 10 * i, hi = i < 2 ? 10 * i + 10 : 26;

		snprintf(sn[i], sizeof sn[i], "adam.m[%d:%d]", lo, hi);
		sp[i] = (struct dt_ckpt_tensor){ .name = sn[i],
						 .data = s.o[0] + lo,
						 .n_dims = 1,
						 .shape = { hi - lo } };
	}
	sub(dir, "partbad", NULL);
	ck_assert(dt_ckpt_shard_begin(dir, 7, tmp, sizeof tmp, &err) == DT_OK);
	ck_assert(dt_ckpt_shard_write(tmp, "params.safetensors", p, NP, &f[0],
				      &err) == DT_OK);
	for (int i = 0; i < 3; i++)
		ck_assert(dt_ckpt_shard_write(tmp, names[i] + 15, sp + i, 1,
					      &f[i + 1], &err) == DT_OK);
	ck_assert_msg(dt_ckpt_shard_finish(dir, tmp, NULL, &m, f, 4, &err) ==
		      DT_OK, "%s", err.msg);
	sub(ck, "partbad", "step-000000007");
	for (int i = 0; i < 3; i++) {
		sub(fn[i], "partbad", names[i]);
		size[i] = file_size(fn[i]);
		crc[i] = file_crc(fn[i]);
	}
	ck_assert_msg(dt_ckpt_load_part(ck, 3, NULL, 0, &span, 1, &err) ==
		      DT_OK, "%s", err.msg);
	ck_assert(memcmp(part, s.o[0] + 6, 18 * sizeof(float)) == 0);

	ck_assert_int_eq(truncate(fn[0], size[0] - 8), 0);
	ck_assert_int_eq(unlink(fn[2]), 0);
	ck_assert_int_eq(dt_ckpt_load_part(ck, 3, NULL, 0, &span, 1, &err),
			 DT_ERR_FORMAT);
	snprintf(want, sizeof want, "step-000000007: rank 3 needs float 6 of "
		 "adam.m, which no readable file holds: "
		 "rank-00000.safetensors: %ld bytes, MANIFEST.json lists %ld "
		 "(truncated) with CRC-32 %08x, its header unreadable; "
		 "rank-00002.safetensors: missing; MANIFEST.json lists it "
		 "with %ld bytes, CRC-32 %08x", size[0] - 8, size[0], crc[0],
		 size[2], crc[2]);
	ASSERT_HAS(err.msg, want);
	/* rank-00001 read well before the gap was found: the old code
	 * took it for the failed file and named the other two again. */
	ck_assert_int_eq(times_in(err.msg, "rank-00000.safetensors"), 1);
	ck_assert_int_eq(times_in(err.msg, "rank-00002.safetensors"), 1);
	ck_assert_int_eq(times_in(err.msg, "damaged too"), 0);
	/* A whole tensor read first, then the span not found. */
	ck_assert_int_eq(dt_ckpt_load_part(ck, 3, &whole, 1, &span, 1, &err),
			 DT_ERR_FORMAT);
	ASSERT_HAS(err.msg, want);
	ck_assert_int_eq(times_in(err.msg, "rank-00000.safetensors"), 1);
	ck_assert_int_eq(times_in(err.msg, "rank-00002.safetensors"), 1);
	ck_assert_int_eq(times_in(err.msg, "damaged too"), 0);

	/* The second file a directory, then a FIFO (opened without
	 * blocking); a rank that needs [10, 20) only. */
	span.lo = 10;
	span.hi = 20;
	ck_assert_int_eq(unlink(fn[1]), 0);
	ck_assert_int_eq(mkdir(fn[1], 0755), 0);
	ck_assert_int_eq(dt_ckpt_load_part(ck, 1, NULL, 0, &span, 1, &err),
			 DT_ERR_FORMAT);
	snprintf(want, sizeof want, "rank 1 needs float 10 of adam.m, which "
		 "no readable file holds: rank-00000.safetensors: %ld bytes, "
		 "MANIFEST.json lists %ld (truncated) with CRC-32 %08x, its "
		 "header unreadable; rank-00001.safetensors: a directory, not "
		 "a regular file (a checkpoint holds regular files only); "
		 "MANIFEST.json lists it with %ld bytes, CRC-32 %08x; "
		 "rank-00002.safetensors: missing", size[0] - 8, size[0],
		 crc[0], size[1], crc[1]);
	ASSERT_HAS(err.msg, want);
	ck_assert_ptr_null(strstr(err.msg, "0 bytes"));
	assert_named_once(err.msg, 0);
	ck_assert_int_eq(rmdir(fn[1]), 0);
	ck_assert_int_eq(mkfifo(fn[1], 0644), 0);
	ck_assert_int_eq(dt_ckpt_load_part(ck, 1, NULL, 0, &span, 1, &err),
			 DT_ERR_FORMAT);
	snprintf(want, sizeof want, "rank-00001.safetensors: a FIFO, not a "
		 "regular file (a checkpoint holds regular files only); "
		 "MANIFEST.json lists it with %ld bytes, CRC-32 %08x", size[1],
		 crc[1]);
	ASSERT_HAS(err.msg, want);
	ck_assert_ptr_null(strstr(err.msg, "0 bytes"));
	assert_named_once(err.msg, 0);

	/* A failed read names the other damaged files after its own. */
	sub(fn[0], "partbad", "step-000000007/params.safetensors");
	flip(fn[0], -1);
	ck_assert_int_eq(dt_ckpt_load_part(ck, 0, &whole, 1, NULL, 0, &err),
			 DT_ERR_FORMAT);
	snprintf(want, sizeof want, "step-000000007: params.safetensors: "
		 "crc32 mismatch for dense1.bias (rank 0 read it); damaged "
		 "too: rank-00000.safetensors: %ld bytes, MANIFEST.json lists "
		 "%ld (truncated) with CRC-32 %08x, its header unreadable; "
		 "rank-00001.safetensors: a FIFO", size[0] - 8, size[0],
		 crc[0]);
	ASSERT_HAS(err.msg, want);
	ASSERT_HAS(err.msg, "; rank-00002.safetensors: missing; MANIFEST.json "
		   "lists it with");
	assert_named_once(err.msg, 1);

	/* Two parameter files, both truncated. */
	shard_save(dir, 8, p, 2, 2);
	sub(ck, "partbad", "step-000000008");
	for (int i = 0; i < 2; i++) {
		sub(fn[i], "partbad", i ? "step-000000008/params-stage-001."
		    "safetensors" : "step-000000008/params-stage-000."
		    "safetensors");
		size[i] = file_size(fn[i]);
		crc[i] = file_crc(fn[i]);
		ck_assert_int_eq(truncate(fn[i], size[i] - 4), 0);
	}
	memset(&s, 0, sizeof s);
	state_targets(&s, pt, ot);
	ck_assert_int_eq(dt_ckpt_check_params(ck, pt, NP, &err),
			 DT_ERR_FORMAT);
	snprintf(want, sizeof want, "step-000000008: params-stage-000."
		 "safetensors: %ld bytes, MANIFEST.json lists %ld (truncated) "
		 "with CRC-32 %08x, its header unreadable; params-stage-001."
		 "safetensors: %ld bytes, MANIFEST.json lists %ld (truncated) "
		 "with CRC-32 %08x, its header unreadable", size[0] - 4,
		 size[0], crc[0], size[1] - 4, size[1], crc[1]);
	ASSERT_HAS(err.msg, want);
}
END_TEST

/* A safetensors file from its header text and n data floats. */
static void
make_st(const char *path, const char *header, size_t n_floats,
	const char *trailer)
{
	size_t len = strlen(header), padded = (len + 7) / 8 * 8;
	size_t total = 8 + padded + 4 * n_floats + strlen(trailer);
	unsigned char *b = dt_xcalloc(total, 1);

	for (int i = 0; i < 8; i++)
		b[i] = (unsigned char)((uint64_t)padded >> (8 * i));
	memcpy(b + 8, header, len);
	memset(b + 8 + len, ' ', padded - len);
	for (size_t i = 0; i < n_floats; i++) {
		float v = (float)i;

		memcpy(b + 8 + padded + 4 * i, &v, 4);
	}
	memcpy(b + 8 + padded + 4 * n_floats, trailer, strlen(trailer));
	write_bytes(path, b, total);
	free(b);
}

START_TEST(test_reader_checks)
{
	static const struct {
		const char *header;
		size_t n_floats;
		const char *trailer;
		const char *reason;
	} cases[] = {
		{ "{\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],"
		  "\"data_offsets\":[0,24]}}", 6, "", NULL },
		{ "{\"a\":{\"dtype\":\"F16\",\"shape\":[2,3],"
		  "\"data_offsets\":[0,12]}}", 3, "", "only F32" },
		{ "{\"a\":{\"dtype\":\"F32\",\"shape\":[2,2],"
		  "\"data_offsets\":[0,24]}}", 6, "", "does not fit" },
		{ "{\"a\":{\"dtype\":\"F32\",\"shape\":[6],"
		  "\"data_offsets\":[4,28]}}", 7, "", "leave a gap" },
		{ "{\"a\":{\"dtype\":\"F32\",\"shape\":[6],"
		  "\"data_offsets\":[0,24]}}", 7, "", "holds 28" },
		{ "{\"a\":{\"dtype\":\"F32\",\"shape\":[6],"
		  "\"data_offsets\":[0,24]}}", 6, "xyz", "holds 27" },
		{ "{\"a\":{\"dtype\":\"F32\",\"shape\":[-6],"
		  "\"data_offsets\":[0,24]}}", 6, "", "shape[0]" },
		{ "{\"a\":{\"dtype\":\"F32\",\"shape\":\"6\","
		  "\"data_offsets\":[0,24]}}", 6, "", "shape must be" },
		{ "{\"a\":{\"dtype\":\"F32\",\"shape\":[6],"
		  "\"data_offsets\":[0,24],\"x\":1}}", 6, "", "exactly" },
		{ "{\"a\":{\"dtype\":\"F32\",\"shape\":[6],"
		  "\"data_offsets\":[0,18446744073709551615]}}", 6, "",
		  "data_offsets" },
		/* Data near INT64_MAX bytes (shape and offsets agree):
		 * 8 + hlen + size would overflow (UBSan's report before the
		 * fix; tests/fuzz/regress/safetensors/ has it too). */
		{ "{\"a\":{\"dtype\":\"F32\",\"shape\":"
		  "[2305843009213693951],\"data_offsets\":"
		  "[0,9223372036854775804]}}", 6, "",
		  "header describes 9223372036854775804 bytes" },
		{ "{\"a\":{\"dtype\":\"F32\",\"shape\":[6],"
		  "\"data_offsets\":[0,24]},\"__metadata__\":"
		  "{\"crc32:a\":\"xyz\"}}", 6, "", "8 hex digits" },
		{ "{\"a\":{\"dtype\":\"F32\",\"shape\":[6],"
		  "\"data_offsets\":[0,24]},\"__metadata__\":"
		  "{\"crc32:b\":\"00000000\"}}", 6, "", "names no tensor" },
		{ "{\"a\":{\"dtype\":\"F32\",\"shape\":[6],"
		  "\"data_offsets\":[0,24]},\"__metadata__\":"
		  "{\"crc32:a\":\"00000000\"}}", 6, "", "crc32 mismatch" },
		{ "{\"a\":{\"dtype\":\"F32\",\"shape\":[6],"
		  "\"data_offsets\":[0,24]},\"__metadata__\":"
		  "{\"n\":5}}", 6, "", "not a string" },
		{ "[1,2]", 0, "", "not a JSON object" },
		{ "{\"a\":{\"dtype\":\"F32\",\"shape\":[6],", 0, "",
		  "invalid JSON" },
		{ "{\"a\":1} x", 0, "", "unexpected text" },
	};
	char path[1024];
	float buf[6];
	struct dt_ckpt_target t = { "a", buf, 2, { 2, 3 } };
	struct dt_error err;

	ck_assert_int_eq(mkdir(sub(path, "reader", NULL), 0777), 0);
	sub(path, "reader", "t.safetensors");
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		enum dt_status st;

		make_st(path, cases[i].header, cases[i].n_floats,
			cases[i].trailer);
		t.n_dims = strstr(cases[i].header, "[6]") ? 1 : 2;
		t.shape[0] = t.n_dims == 1 ? 6 : 2;
		st = dt_ckpt_import(path, &t, 1, &err);
		if (cases[i].reason == NULL) {
			ck_assert_msg(st == DT_OK, "case %zu: %s", i, err.msg);
			ck_assert(buf[5] == 5.0f);
			continue;
		}
		ck_assert_msg(st == DT_ERR_FORMAT, "case %zu: status %d", i,
			      (int)st);
		ck_assert_msg(strstr(err.msg, cases[i].reason) != NULL &&
			      strstr(err.msg, "t.safetensors") != NULL,
			      "case %zu: \"%s\" lacks \"%s\"", i, err.msg,
			      cases[i].reason);
	}
	/* A header length beyond the file, and a file shorter than 8. */
	write_bytes(path, "\xff\xff\x00\x00\x00\x00\x00\x00{}", 10);
	ck_assert_int_eq(dt_ckpt_import(path, &t, 1, &err), DT_ERR_FORMAT);
	ASSERT_HAS(err.msg, "header length 65535");
	write_bytes(path, "\x02\x00", 2);
	ck_assert_int_eq(dt_ckpt_import(path, &t, 1, &err), DT_ERR_FORMAT);
	ASSERT_HAS(err.msg, "unexpected end of file");
}
END_TEST

/* ---- numpy reads what dtrain writes --------------------------------------- */

static const char numpy_script[] =
	"import gzip, json, struct, sys, zlib\n"
	"import numpy as np\n"
	"def tensors(b):\n"
	"    n = struct.unpack('<Q', b[:8])[0]\n"
	"    assert n % 8 == 0\n"
	"    h = json.loads(b[8:8 + n])\n"
	"    meta = h.pop('__metadata__')\n"
	"    out = {}\n"
	"    for name, t in h.items():\n"
	"        lo, hi = t['data_offsets']\n"
	"        raw = b[8 + n + lo:8 + n + hi]\n"
	"        assert int(meta['crc32:' + name], 16) == zlib.crc32(raw)\n"
	"        assert t['dtype'] == 'F32'\n"
	"        out[name] = np.frombuffer(raw, '<f4').reshape(t['shape'])\n"
	"    return out\n"
	"want = {}\n"
	"for line in open(sys.argv[1]):\n"
	"    name, shape, *vals = line.split()\n"
	"    shape = [int(d) for d in shape.split(',')]\n"
	"    want[name] = np.array([float.fromhex(v) for v in vals],\n"
	"                          np.float32).reshape(shape)\n"
	"got = tensors(open(sys.argv[2], 'rb').read())\n"
	"got.update(tensors(gzip.open(sys.argv[3]).read()))\n"
	"assert sorted(got) == sorted(want), (sorted(got), sorted(want))\n"
	"for k in want:\n"
	"    assert got[k].shape == want[k].shape, k\n"
	"    assert np.array_equal(got[k], want[k]), k\n"
	"print('numpy read', len(got), 'tensors')\n";

static void
put_expect(FILE *f, const struct dt_ckpt_tensor *t)
{
	size_t n = 1;

	fprintf(f, "%s ", t->name);
	for (int d = 0; d < t->n_dims; d++) {
		fprintf(f, "%s%lld", d ? "," : "", (long long)t->shape[d]);
		n *= (size_t)t->shape[d];
	}
	for (size_t i = 0; i < n; i++)
		fprintf(f, " %a", (double)t->data[i]);
	fprintf(f, "\n");
}

START_TEST(test_numpy_reads)
{
	char dir[1024], script[1024], expect[1024], cmd[4096];
	struct state s;
	struct dt_ckpt_tensor p[NP], o[NO];
	struct dt_ckpt_meta m = meta_for(3);
	struct dt_ckpt_opts opts = { .compress_optim = 1 };
	struct dt_error err;
	FILE *f;

	if (access(PYTHON, X_OK) != 0 ||
	    system(PYTHON " -c 'import numpy' 2>/dev/null") != 0) {
		printf("test_ckpt: %s lacks numpy, skipping the numpy test\n",
		       PYTHON);
		return;
	}
	sub(dir, "numpy", NULL);
	state_fill(&s, 3, 0);
	state_tensors(&s, p, o);
	ck_assert_int_eq(dt_ckpt_save(dir, &opts, &m, p, NP, o, NO, &err),
			 DT_OK);
	f = fopen(sub(script, "numpy", "read.py"), "w");
	ck_assert_ptr_nonnull(f);
	fputs(numpy_script, f);
	fclose(f);
	f = fopen(sub(expect, "numpy", "expect.txt"), "w");
	ck_assert_ptr_nonnull(f);
	for (int i = 0; i < NP; i++)
		put_expect(f, &p[i]);
	for (int i = 0; i < NO; i++)
		put_expect(f, &o[i]);
	fclose(f);
	ck_assert(snprintf(cmd, sizeof cmd, PYTHON " %s %s %s/step-000000003/"
			   "params.safetensors %s/step-000000003/"
			   "optim.safetensors.gz", script, expect, dir, dir) <
		  (int)sizeof cmd);
	ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* ---- saves whose tensors are fetched ------------------------------------- */

/* A fetch (dt_ckpt_fetch_fn) from the whole tensors ctx (the params
 * list, then the optim list), recording each call's tensor and range. */
struct fetcher {
	const struct dt_ckpt_tensor *lists[2];
	int64_t calls, floats, most;
};

static enum dt_status
fetch_from(void *ctx, int file, size_t j, int64_t lo, int64_t hi, float *buf,
	   struct dt_error *err)
{
	struct fetcher *x = ctx;

	(void)err;
	ck_assert(hi > lo && hi - lo <= DT_CKPT_STREAM_FLOATS);
	memcpy(buf, x->lists[file][j].data + lo,
	       (size_t)(hi - lo) * sizeof *buf);
	x->calls++;
	x->floats += hi - lo;
	if (hi - lo > x->most)
		x->most = hi - lo;
	return DT_OK;
}

static void
same_bytes(const char *a, const char *b)
{
	FILE *f = fopen(a, "rb"), *g = fopen(b, "rb");
	static char x[1 << 16], y[1 << 16];
	size_t n, m;

	ck_assert_ptr_nonnull(f);
	ck_assert_ptr_nonnull(g);
	do {
		n = fread(x, 1, sizeof x, f);
		m = fread(y, 1, sizeof y, g);
		ck_assert_uint_eq(n, m);
		ck_assert(memcmp(x, y, n) == 0);
	} while (n > 0);
	fclose(f);
	fclose(g);
}

/* A save whose tensors are fetched piece by piece writes the bytes of
 * the same tensors given whole, the gzip'd optimizer file too: a
 * tensor of 2.5 pieces, one of a piece exactly, a small one and a
 * whole one given with its data (not fetched). Each fetched float is
 * asked for twice (the CRC, then the bytes), never more than a piece at
 * a time. */
START_TEST(test_save_fetched)
{
	const int64_t c = DT_CKPT_STREAM_FLOATS;
	const int64_t sizes[4] = { 2 * c + c / 2, c, 7, 5 };
	const char *names[4] = { "big.weight", "piece.weight", "small.bias",
				 "given.bias" };
	struct dt_ckpt_tensor whole[4], opt[1], fp[4], fo[1];
	struct dt_ckpt_meta m = meta_for(5);
	struct dt_ckpt_opts o1 = { .compress_optim = 1 }, o2 = o1;
	struct fetcher x = { .lists = { whole, opt } };
	char a[1024], b[1024], fa[1024], fb[1024];
	struct dt_error err;
	float *data[5];

	for (int i = 0; i < 5; i++) {
		int64_t n = i < 4 ? sizes[i] : sizes[0];

		data[i] = dt_xalloc_floats((size_t)n);
		for (int64_t k = 0; k < n; k++)
			data[i][k] = (float)((k * 2654435761u + (unsigned)i) %
					     100003) / 7.0f;
	}
	for (int i = 0; i < 4; i++) {
		whole[i] = (struct dt_ckpt_tensor){ .name = names[i],
			.data = data[i], .n_dims = 1, .shape = { sizes[i] } };
		fp[i] = whole[i];
		if (i < 3)
			fp[i].data = NULL;
	}
	opt[0] = (struct dt_ckpt_tensor){ .name = "adam.m", .data = data[4],
					  .n_dims = 1, .shape = { sizes[0] } };
	fo[0] = opt[0];
	fo[0].data = NULL;
	o2.fetch = fetch_from;
	o2.fetch_ctx = &x;
	sub(a, "fetched-whole", NULL);
	sub(b, "fetched", NULL);
	ck_assert_int_eq(dt_ckpt_save(a, &o1, &m, whole, 4, opt, 1, &err),
			 DT_OK);
	ck_assert_int_eq(dt_ckpt_save(b, &o2, &m, fp, 4, fo, 1, &err), DT_OK);
	/* 3 + 1 + 1 pieces of the parameters, 3 of adam.m, each twice. */
	ck_assert_int_eq(x.calls, 2 * (5 + 3));
	ck_assert_int_eq(x.floats, 2 * (sizes[0] + sizes[1] + sizes[2] +
					sizes[0]));
	ck_assert_int_eq(x.most, c);
	same_bytes(sub(fa, "fetched-whole", "step-000000005/params.safetensors"),
		   sub(fb, "fetched", "step-000000005/params.safetensors"));
	same_bytes(sub(fa, "fetched-whole",
		       "step-000000005/optim.safetensors.gz"),
		   sub(fb, "fetched", "step-000000005/optim.safetensors.gz"));
	ck_assert_int_eq(dt_ckpt_verify(sub(fb, "fetched", "step-000000005"),
					&err), DT_OK);
	for (int i = 0; i < 5; i++)
		free(data[i]);
}
END_TEST

/* ---- the suite ------------------------------------------------------------ */

static void
make_tmpdir(void)
{
	const char *base = getenv("TMPDIR");

	snprintf(tmpdir, sizeof tmpdir, "%s/test_ckpt.XXXXXX",
		 base && *base && strlen(base) < 256 ? base : "/tmp");
	if (mkdtemp(tmpdir) == NULL) {
		perror("test_ckpt: mkdtemp");
		abort();
	}
}

static void
remove_tmpdir(void)
{
	char cmd[1024];

	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "test_ckpt: cannot remove %s\n", tmpdir);
}

static Suite *
ckpt_suite(void)
{
	Suite *s = suite_create("ckpt");
	TCase *tc = tcase_create("roundtrip");

	tcase_add_unchecked_fixture(tc, make_tmpdir, remove_tmpdir);
	tcase_add_test(tc, test_roundtrip);
	tcase_add_test(tc, test_roundtrip_gzip);
	tcase_add_test(tc, test_roundtrip_no_optim);
	tcase_add_test(tc, test_replace_same_step);
	tcase_add_test(tc, test_load_mismatch);
	tcase_add_test(tc, test_bad_save_input);
	suite_add_tcase(s, tc);

	tc = tcase_create("damage");
	tcase_add_unchecked_fixture(tc, make_tmpdir, remove_tmpdir);
	tcase_add_test(tc, test_flip_params);
	tcase_add_test(tc, test_flip_optim);
	tcase_add_test(tc, test_flip_gzip);
	tcase_add_test(tc, test_truncated);
	tcase_add_test(tc, test_missing_manifest);
	tcase_add_test(tc, test_garbage_header);
	tcase_add_test(tc, test_damaged_meta);
	tcase_add_test(tc, test_manifest_other_file);
	tcase_add_test(tc, test_find_none);
	suite_add_tcase(s, tc);

	tc = tcase_create("lifecycle");
	tcase_add_unchecked_fixture(tc, make_tmpdir, remove_tmpdir);
	tcase_add_test(tc, test_keep_last);
	tcase_add_test(tc, test_clean_half_pruned);
	tcase_add_test(tc, test_write_failure);
	tcase_add_test(tc, test_unwritable_dir);
	suite_add_tcase(s, tc);

	/* Tensors of more than one piece (2^20 floats): tens of MB. */
	tc = tcase_create("fetched");
	tcase_add_unchecked_fixture(tc, make_tmpdir, remove_tmpdir);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_save_fetched);
	suite_add_tcase(s, tc);

	tc = tcase_create("safetensors");
	tcase_add_unchecked_fixture(tc, make_tmpdir, remove_tmpdir);
	tcase_add_test(tc, test_export_import);
	tcase_add_test(tc, test_export_shards);
	tcase_add_test(tc, test_load_part);
	tcase_add_test(tc, test_load_part_damaged);
	tcase_add_test(tc, test_reader_checks);
	tcase_add_test(tc, test_numpy_reads);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(ckpt_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

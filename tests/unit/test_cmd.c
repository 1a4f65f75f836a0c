/* SPDX-License-Identifier: MIT */
/* test_cmd.c - the option parser of the commands (cmd/opt.c) on a table
 * made for the test: every kind of value, its range and its refusals by
 * name, --set in order, the operand count, options after the operand, the
 * synopsis and --help made from the table; and checks over the real
 * command table (every option documented, no name twice); the filter of
 * mpirun's stderr under `run -n` (launch/banner.c). The words of
 * each command's synopsis against dtrain(1) are
 * tests/integration/usage-man.sh's. */
#include <check.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launch/banner.h"
#include "cmd/cmd.h"

struct t_args {
	int flag, count;
	const char *name;
	double ratio;
	uint64_t seed;
};

static const struct dt_cmd_opt t_opts[] = {
	{ .name = "flag", .short_name = 'f', .kind = DT_CMD_ARG_FLAG,
	  .offset = offsetof(struct t_args, flag), .doc = "a flag" },
	{ .name = "count", .short_name = 'c', .kind = DT_CMD_ARG_INT,
	  .arg = "n", .offset = offsetof(struct t_args, count), .min = 1,
	  .max = 9, .doc = "a count" },
	{ .name = "name", .kind = DT_CMD_ARG_STRING, .arg = "text",
	  .offset = offsetof(struct t_args, name), .flags = DT_CMD_OPT_BARE,
	  .doc = "a name" },
	{ .name = "ratio", .kind = DT_CMD_ARG_NUMBER, .arg = "r",
	  .offset = offsetof(struct t_args, ratio), .min = 0,
	  .doc = "a ratio" },
	{ .name = "seed", .kind = DT_CMD_ARG_U64, .arg = "s",
	  .offset = offsetof(struct t_args, seed), .doc = "a seed" },
	DT_CMD_OPT_SET_ENTRY,
	{ .name = "run-dir", .kind = DT_CMD_ARG_REFUSED, .arg = "dir",
	  .doc = "not here" },
	{ .kind = DT_CMD_ARG_END },
};

static int
t_run(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return 0;
}

static const struct dt_cmd t_cmd = {
	.name = "t",
	.summary = "a test command",
	.opts = t_opts,
	.operand = "job.yaml",
	.operand_noun = "job file",
	.operand_doc = "the job",
	.run = t_run,
};

/* argv for the parser, from a NULL-terminated list: heap copies, since
 * getopt_long permutes the array. */
struct t_argv {
	int argc;
	char *argv[16];
};

static void
t_argv_init(struct t_argv *t, const char *const *words)
{
	memset(t, 0, sizeof *t);
	t->argv[t->argc++] = strdup("t");
	while (*words != NULL)
		t->argv[t->argc++] = strdup(*words++);
}

static void
t_argv_fini(struct t_argv *t)
{
	for (int i = 0; i < t->argc; i++)
		free(t->argv[i]);
}

/* The --set values of the last parse, copied. */
static char t_sets[4][64];

/* Parses words into *a and *line (*a zeroed first; line->sets freed
 * here, the values copied to t_sets, the strings of *a and the operand
 * to static copies); returns the status and leaves the message in err. */
static enum dt_status
parse(const char *const *words, struct t_args *a, struct dt_cmd_line *line,
      struct dt_error *err)
{
	static char operand[64], name[64];
	struct t_argv t;
	enum dt_status st;

	memset(a, 0, sizeof *a);
	dt_error_clear(err);
	t_argv_init(&t, words);
	st = dt_cmd_opts_parse(&t_cmd, t.argc, t.argv, a, line, err);
	for (int i = 0; st == DT_OK && i < line->n_sets && i < 4; i++)
		snprintf(t_sets[i], sizeof t_sets[i], "%s", line->sets[i]);
	if (line->operand != NULL) {
		snprintf(operand, sizeof operand, "%s", line->operand);
		line->operand = operand;
	}
	if (a->name != NULL) {
		snprintf(name, sizeof name, "%s", a->name);
		a->name = name;
	}
	free(line->sets);
	line->sets = NULL;
	t_argv_fini(&t);
	return st;
}

/* Parsing words fails with a message that contains want. */
static void
refused(const char *const *words, const char *want)
{
	struct t_args a;
	struct dt_cmd_line line;
	struct dt_error err;

	ck_assert_int_eq(parse(words, &a, &line, &err), DT_ERR_USAGE);
	ck_assert_msg(strstr(err.msg, want) != NULL, "\"%s\" lacks \"%s\"",
		      err.msg, want);
}

START_TEST(every_kind_stored)
{
	static const char *const w[] = { "--flag", "-c", "7", "--name", "x",
					  "--ratio", "0.25", "--seed", "0x10",
					  "job.yaml", NULL };
	struct t_args a;
	struct dt_cmd_line line;
	struct dt_error err;

	ck_assert_int_eq(parse(w, &a, &line, &err), DT_OK);
	ck_assert_int_eq(a.flag, 1);
	ck_assert_int_eq(a.count, 7);
	ck_assert_str_eq(a.name, "x");
	ck_assert(a.ratio == 0.25);
	ck_assert(a.seed == 16);
	ck_assert_str_eq(line.operand, "job.yaml");
	ck_assert_int_eq(line.n_sets, 0);
	ck_assert_int_eq(line.help, 0);
}
END_TEST

/* GNU order: the operand may come first; "=" and clustered short
 * options; the largest seed. */
START_TEST(any_order_and_spellings)
{
	static const char *const w[] = { "job.yaml", "-fc3", "--count=4",
					  "--seed=18446744073709551615", NULL };
	struct t_args a;
	struct dt_cmd_line line;
	struct dt_error err;

	ck_assert_int_eq(parse(w, &a, &line, &err), DT_OK);
	ck_assert_int_eq(a.flag, 1);
	ck_assert_int_eq(a.count, 4);	/* a later one wins */
	ck_assert(a.seed == UINT64_MAX);
	ck_assert_str_eq(line.operand, "job.yaml");
}
END_TEST

START_TEST(sets_in_order)
{
	static const char *const w[] = { "--set", "train.lr=0.1", "j.yaml",
					 "--set=train.steps=5", "--set",
					 "train.lr=0.2", NULL };
	struct t_args a;
	struct dt_cmd_line line;
	struct dt_error err;

	ck_assert_int_eq(parse(w, &a, &line, &err), DT_OK);
	ck_assert_int_eq(line.n_sets, 3);
	ck_assert_str_eq(t_sets[0], "train.lr=0.1");
	ck_assert_str_eq(t_sets[1], "train.steps=5");
	ck_assert_str_eq(t_sets[2], "train.lr=0.2");
	ck_assert_str_eq(line.operand, "j.yaml");
}
END_TEST

START_TEST(values_refused_by_name)
{
	static const char *const c0[] = { "-c", "0", "j", NULL };
	static const char *const c10[] = { "--count", "10", "j", NULL };
	static const char *const cx[] = { "-c", "3x", "j", NULL };
	static const char *const r[] = { "--ratio", "-0.5", "j", NULL };
	static const char *const rnan[] = { "--ratio", "nan", "j", NULL };
	static const char *const s[] = { "--seed", "-1", "j", NULL };
	static const char *const s65[] = { "--seed", "18446744073709551616",
					   "j", NULL };
	static const char *const set[] = { "--set", "train.lr", "j", NULL };
	static const char *const set0[] = { "--set", "=1", "j", NULL };

	refused(c0, "-c: expected a whole number from 1 to 9, found \"0\"");
	refused(c10, "--count: expected a whole number from 1 to 9, found "
		"\"10\"");
	refused(cx, "-c: expected a whole number from 1 to 9, found \"3x\"");
	refused(r, "--ratio: expected a number >= 0, found \"-0.5\"");
	refused(rnan, "--ratio: expected a number >= 0, found \"nan\"");
	refused(s, "--seed: expected a whole number from 0 to 2^64-1");
	refused(s65, "--seed: expected a whole number from 0 to 2^64-1");
	refused(set, "--set: expected key.path=value, found \"train.lr\"");
	refused(set0, "--set: expected key.path=value, found \"=1\"");
}
END_TEST

START_TEST(usage_refused_by_name)
{
	static const char *const unk[] = { "--bogus", "j", NULL };
	static const char *const unk_s[] = { "-x", "j", NULL };
	static const char *const typo[] = { "--rati", "1", "--run_dir", "j",
					    NULL };
	static const char *const typo2[] = { "--sed=3", "j", NULL };
	static const char *const typo3[] = { "--cuont", "2", "j", NULL };
	static const char *const miss[] = { "j", "--count", NULL };
	static const char *const miss_s[] = { "j", "-c", NULL };
	static const char *const noval[] = { "--flag=1", "j", NULL };
	static const char *const refuse[] = { "--run-dir", "d", "j", NULL };
	static const char *const none[] = { "-f", NULL };
	static const char *const two[] = { "a", "b", NULL };

	refused(unk, "unknown option \"--bogus\" (dtrain help t describes");
	refused(unk_s, "unknown option \"-x\"");
	/* Nothing near: a refused option is no suggestion. */
	refused(typo, "unknown option \"--run_dir\" (dtrain help t");
	refused(typo2, "unknown option \"--sed=3\"; did you mean --seed?");
	refused(typo3, "unknown option \"--cuont\"; did you mean --count?");
	refused(miss, "--count needs a value (n)");
	refused(miss_s, "-c needs a value (n)");
	refused(noval, "--flag takes no value");
	refused(refuse, "--run-dir: not here");
	refused(none, "expected one job file");
	refused(two, "expected one job file, found 2 arguments that are not "
		"options (\"a\", \"b\")");
}
END_TEST

/* -h stops the parse, before a missing operand or a later bad value. */
START_TEST(help_stops_the_parse)
{
	static const char *const h[] = { "-f", "--help", "-c", "0", NULL };
	static const char *const h2[] = { "-h", NULL };
	struct t_args a;
	struct dt_cmd_line line;
	struct dt_error err;

	ck_assert_int_eq(parse(h, &a, &line, &err), DT_OK);
	ck_assert_int_eq(line.help, 1);
	ck_assert_int_eq(a.flag, 1);
	ck_assert_int_eq(parse(h2, &a, &line, &err), DT_OK);
	ck_assert_int_eq(line.help, 1);
}
END_TEST

START_TEST(synopsis_and_help_from_the_table)
{
	char buf[256], *text = NULL;
	size_t size = 0;
	FILE *f;

	dt_cmd_synopsis(&t_cmd, buf, sizeof buf);
	ck_assert_str_eq(buf, "dtrain t [-f] [-c n] --name text [--ratio r] "
			 "[--seed s] [--set key=value ...] job.yaml");
	f = open_memstream(&text, &size);
	ck_assert_ptr_nonnull(f);
	dt_cmd_print_help(&t_cmd, f);
	fclose(f);
	ck_assert_msg(strncmp(text, "usage: dtrain t [-f] [-c n] --name text",
			      39) == 0, "%s", text);
	ck_assert_msg(strstr(text, "\n  -f, --flag           a flag\n") !=
		      NULL, "%s", text);
	ck_assert_msg(strstr(text, "\n      --set key=value  override a job "
			     "key") != NULL, "%s", text);
	ck_assert_msg(strstr(text, "\n  -h, --help           show this help")
		      != NULL, "%s", text);
	ck_assert_msg(strstr(text, "\n  job.yaml             the job\n") !=
		      NULL, "%s", text);
	ck_assert_msg(strstr(text, "run-dir") == NULL, "%s", text);
	free(text);
}
END_TEST

/* Over the real commands: each has a summary and an operand, and each
 * option a doc short enough for an 80-column help, a value name when it
 * takes a value, and a name no other option of the command has. */
START_TEST(real_tables_are_complete)
{
	int n = 0;

	for (int i = 0; dt_cmd_table[i] != NULL; i++) {
		const struct dt_cmd *cmd = dt_cmd_table[i];

		n++;
		ck_assert_ptr_eq(dt_cmd_find(cmd->name), cmd);
		ck_assert_ptr_nonnull(cmd->summary);
		ck_assert_ptr_nonnull(cmd->operand);
		ck_assert_ptr_nonnull(cmd->operand_noun);
		ck_assert_ptr_nonnull(cmd->operand_doc);
		for (int k = 0; cmd->opts[k].kind != DT_CMD_ARG_END; k++) {
			const struct dt_cmd_opt *o = &cmd->opts[k];

			ck_assert_msg(o->doc != NULL && strlen(o->doc) <= 50,
				      "%s option %d: doc", cmd->name, k);
			ck_assert_msg(o->name != NULL || o->short_name,
				      "%s option %d: no name", cmd->name, k);
			ck_assert_msg((o->kind == DT_CMD_ARG_FLAG) ==
				      (o->arg == NULL) ||
				      o->kind == DT_CMD_ARG_REFUSED,
				      "%s option %d: value name", cmd->name, k);
			for (int j = 0; j < k; j++) {
				const struct dt_cmd_opt *p = &cmd->opts[j];

				ck_assert(!o->short_name ||
					  o->short_name != p->short_name);
				ck_assert(o->name == NULL || p->name == NULL ||
					  strcmp(o->name, p->name) != 0);
			}
		}
	}
	ck_assert_int_eq(n, 11);
	ck_assert_ptr_null(dt_cmd_find("frobnicate"));
}
END_TEST

/* mpirun's stderr as Open MPI 4.1 writes it after every rank exited 3
 * (the two banners copied from a real run), between rank output: a
 * progress line redrawn with \r and no newline, a short line of dashes,
 * another show_help block (a rank killed) that must always pass, and a
 * rule that no block follows. */
#define RULE "------------------------------------------------------------" \
	"--------------\n"
static const char banner_a[] = RULE
	"Primary job  terminated normally, but 1 process returned\n"
	"a non-zero exit code. Per user-direction, the job has been aborted.\n"
	RULE;
static const char banner_b[] = RULE
	"mpirun detected that one or more processes exited with non-zero "
	"status, thus causing\nthe job to be terminated. The first process "
	"to do so was:\n\n  Process name: [[4859,1],0]\n  Exit code:    3\n"
	RULE;
static const char other[] = RULE
	"mpirun noticed that process rank 1 with PID 0 on node vm exited on "
	"signal 9 (Killed).\n" RULE;

/* What the filter writes for the pieces of text cut every `chunk` bytes
 * (0: at once), ended with quiet. */
static char *
filtered(const char *text, size_t chunk, int quiet)
{
	struct dt_banner b;
	char *out = NULL;
	size_t n = 0, len = strlen(text);
	FILE *f = open_memstream(&out, &n);

	ck_assert_ptr_nonnull(f);
	dt_banner_init(&b, f);
	for (size_t i = 0; i < len; i += chunk ? chunk : len)
		dt_banner_feed(&b, text + i, chunk && len - i > chunk ?
			       chunk : len - i);
	dt_banner_end(&b, quiet);
	fclose(f);
	return out;
}

START_TEST(mpirun_banners_held_back)
{
	char in[4096], loud[4096], quiet[4096];
	const char *head = "dtrain: rank 0: hello\n\r\033[Kstep 3/9  loss 2.3"
			   "\r\033[Kstep 4/9  loss 2.1\n-----\n";
	const char *tail = "dtrain: interrupted at step 4\n" RULE "no close";
	static const size_t chunks[] = { 0, 1, 2, 7, 64 };

	snprintf(in, sizeof in, "%s%s%s%s%s", head, banner_a, other, banner_b,
		 tail);
	/* Shown: everything, the two banners after the rest. */
	snprintf(loud, sizeof loud, "%s%s%s%s%s", head, other, tail, banner_a,
		 banner_b);
	/* Quiet: the two banners alone are gone. */
	snprintf(quiet, sizeof quiet, "%s%s%s", head, other, tail);
	for (size_t i = 0; i < sizeof chunks / sizeof chunks[0]; i++) {
		char *a = filtered(in, chunks[i], 0);
		char *q = filtered(in, chunks[i], 1);

		ck_assert_msg(strcmp(a, loud) == 0, "chunk %zu: %s",
			      chunks[i], a);
		ck_assert_msg(strcmp(q, quiet) == 0, "chunk %zu: %s",
			      chunks[i], q);
		free(a);
		free(q);
	}
}
END_TEST

/* Text passes at once, not at the end of its line: a redrawn progress
 * line must reach the terminal as it is drawn. */
START_TEST(mpirun_text_passes_at_once)
{
	struct dt_banner b;
	char *out = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&out, &n);

	dt_banner_init(&b, f);
	dt_banner_feed(&b, "\r\033[Kstep 1/9", 12);
	fflush(f);
	ck_assert_uint_eq(n, 12);
	dt_banner_feed(&b, "\n----", 5);
	fflush(f);
	ck_assert_uint_eq(n, 13);	/* dashes held: a rule may follow */
	ck_assert(dt_banner_pending(&b));
	dt_banner_flush(&b);		/* none did, for too long */
	fflush(f);
	ck_assert_uint_eq(n, 17);
	dt_banner_feed(&b, "-x\n", 3);
	dt_banner_end(&b, 1);
	fclose(f);
	ck_assert_str_eq(out, "\r\033[Kstep 1/9\n-----x\n");
	free(out);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("cmd");
	TCase *tc = tcase_create("cmd");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, every_kind_stored);
	tcase_add_test(tc, any_order_and_spellings);
	tcase_add_test(tc, sets_in_order);
	tcase_add_test(tc, values_refused_by_name);
	tcase_add_test(tc, usage_refused_by_name);
	tcase_add_test(tc, help_stops_the_parse);
	tcase_add_test(tc, synopsis_and_help_from_the_table);
	tcase_add_test(tc, real_tables_are_complete);
	tcase_add_test(tc, mpirun_banners_held_back);
	tcase_add_test(tc, mpirun_text_passes_at_once);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}

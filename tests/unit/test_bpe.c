/* SPDX-License-Identifier: MIT */
/* test_bpe.c - Check suite for the byte-level BPE of src/data/bpe.h: a
 * small tokenizer in GPT-2's file format that the test writes, with the
 * ids its algorithm gives worked out by hand; the same in a Hugging Face
 * tokenizer.json; malformed files refused naming the file and the place;
 * learning (the exact size asked, or why fewer, each merge worked out by
 * hand); round trips of random bytes and invalid UTF-8; determinism. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data/bpe.h"
#include "util/alloc.h"

static char tmpdir[512];

static void
make_tmpdir(void)
{
	const char *base = getenv("TMPDIR");

	snprintf(tmpdir, sizeof tmpdir, "%s/test_bpe.XXXXXX",
		 base != NULL && base[0] != '\0' ? base : "/tmp");
	if (mkdtemp(tmpdir) == NULL)
		abort();
}

static const char *
path_of(const char *name)
{
	static char buf[4][600];
	static int k;

	k = (k + 1) % 4;
	snprintf(buf[k], sizeof buf[k], "%s/%s", tmpdir, name);
	return buf[k];
}

static void
write_file(const char *name, const char *text)
{
	FILE *f = fopen(path_of(name), "wb");

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fputs(text, f) >= 0, 1);
	ck_assert_int_eq(fclose(f), 0);
}

/* GPT-2's bytes_to_unicode, written out again here rather than taken from
 * the library: the printable bytes stand for themselves, the other 68
 * (0-32, 127-160, 173) for U+0100 onwards in ascending order. */
static unsigned
gpt2_cp(unsigned b)
{
	unsigned k = 0;

	if ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174)
		return b;
	for (unsigned c = 0; c < b; c++)
		if (!((c >= 33 && c <= 126) || (c >= 161 && c <= 172) ||
		      c >= 174))
			k++;
	return 256 + k;
}

/* GPT-2's id of byte b in its encoder.json: the printable bytes first. */
static int
gpt2_byte_id(unsigned b)
{
	int id = 0;

	for (unsigned c = 0; c < 256; c++)
		if (gpt2_cp(c) < 256 && c < b)
			id++;
	if (gpt2_cp(b) < 256)
		return id;
	return 188 + (int)(gpt2_cp(b) - 256);
}

/* Appends the JSON string of the written form of bytes s to out. */
static void
json_token(char *out, const char *s)
{
	strcat(out, "\"");
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		char e[16];
		unsigned cp = gpt2_cp(*p);

		if (cp == '"' || cp == '\\')
			snprintf(e, sizeof e, "\\%c", cp);
		else if (cp < 128)
			snprintf(e, sizeof e, "%c", cp);
		else
			snprintf(e, sizeof e, "\\u%04X", cp);
		strcat(out, e);
	}
	strcat(out, "\"");
}

/* The small tokenizer: the 256 bytes with GPT-2's ids, then
 *   256 " t"  257 "he"  258 " the"  259 "aa"  260 "cd"  261 "cdc"
 * and the merges, in rank order (0-based):
 *   0 " t" from " " "t"    3 "aa" from "a" "a"
 *   1 "he" from "h" "e"    4 "cdc" from "cd" "c"  (made before "cd" is)
 *   2 " the" from " t" "he" 5 "cd" from "c" "d" */
static char *
small_encoder(void)
{
	char *out = dt_xcalloc(1 << 16, 1);
	static const char *extra[] = { " t", "he", " the", "aa", "cd", "cdc" };

	strcat(out, "{");
	for (unsigned b = 0; b < 256; b++) {
		char s[2] = { (char)b, 0 }, num[16];

		if (b == 0)
			strcat(out, "\"\\u0100\"");	/* byte 0 */
		else
			json_token(out, s);
		snprintf(num, sizeof num, ": %d, ", gpt2_byte_id(b));
		strcat(out, num);
	}
	for (int i = 0; i < 6; i++) {
		char num[16];

		json_token(out, extra[i]);
		snprintf(num, sizeof num, ": %d%s", 256 + i, i < 5 ? ", " : "");
		strcat(out, num);
	}
	strcat(out, "}\n");
	return out;
}

#define SMALL_MERGES \
	"#version: 0.2\n\xC4\xA0 t\nh e\n\xC4\xA0t he\na a\ncd c\nc d\n"

static struct dt_bpe *
load_ok(const char *name)
{
	struct dt_bpe *b = NULL;
	struct dt_error err;

	dt_error_clear(&err);
	if (dt_bpe_load(path_of(name), &b, &err) != DT_OK)
		ck_abort_msg("%s", err.msg);
	return b;
}

static void
expect_ids(struct dt_bpe *b, const char *text, const int32_t *want,
	   int64_t n_want)
{
	size_t n = strlen(text);
	int32_t *ids = dt_xmalloc(n + 1, sizeof *ids);
	int64_t n_ids = -1;
	struct dt_error err;

	ck_assert_int_eq(dt_bpe_encode(b, (const unsigned char *)text, n, ids,
				       &n_ids, &err), DT_OK);
	ck_assert_int_eq(n_ids, n_want);
	for (int64_t i = 0; i < n_want; i++)
		ck_assert_msg(ids[i] == want[i], "id %lld: %d, expected %d",
			      (long long)i, ids[i], want[i]);
	free(ids);
}

/* " the they aaa cdcd\n" is cut into " the", " they", " aaa", " cdcd" and
 * "\n" (GPT-2's pattern: an optional space and letters; white space at
 * the end). Byte ids: ' ' 220, '\n' 198, 'a' 64, 'y' 88 (the printable
 * bytes from '!' = 0 up, then bytes 0-32 from 188).
 *   " the": pairs " t"(rank 0), "th"(none), "he"(1); rank 0 first:
 *     [" t", h, e]; then "he" (1): [" t", "he"]; then " the" (2): [258].
 *   " they": as above to [" the", y] = [258, 88].
 *   " aaa": " a" has no merge; "aa" (3) occurs at 1 and 2, merged left
 *     to right without overlap: [" ", "aa", "a"] = [220, 259, 64].
 *   " cdcd": "cd" (5) occurs twice and both merge in the same round:
 *     [" ", "cd", "cd"] = [220, 260, 260]. "cd c" has the lower rank (4)
 *     but GPT-2 looks for it only in the next round, when no "cd c" is
 *     left; merging a pair as soon as it appears would give "cdc", "d".
 *   "\n": [198]. */
static const int32_t small_ids[] = {
	258, 258, 88, 220, 259, 64, 220, 260, 260, 198
};
#define SMALL_TEXT " the they aaa cdcd\n"

START_TEST(gpt2_files_hand_worked)
{
	char *enc = small_encoder();
	struct dt_bpe *b;
	const unsigned char *p;

	write_file("encoder.json", enc);
	write_file("vocab.bpe", SMALL_MERGES);
	free(enc);
	b = load_ok("encoder.json");
	ck_assert_int_eq(dt_bpe_size(b), 262);
	ck_assert_int_eq(dt_bpe_merges(b), 6);
	ck_assert_int_eq(strlen(dt_bpe_digest(b)), 64);
	ck_assert_int_eq(dt_bpe_piece(b, 258, &p), 4);
	ck_assert_int_eq(memcmp(p, " the", 4), 0);
	ck_assert_int_eq(dt_bpe_piece(b, 188, &p), 1);
	ck_assert_int_eq(p[0], 0);
	expect_ids(b, SMALL_TEXT, small_ids,
		   sizeof small_ids / sizeof small_ids[0]);
	/* twice: the cache of words gives the same ids */
	expect_ids(b, SMALL_TEXT, small_ids,
		   sizeof small_ids / sizeof small_ids[0]);
	dt_bpe_free(b);
}
END_TEST

/* The same tokenizer saved as a tokenizer.json, read back: same ids. */
START_TEST(hf_file_same_ids)
{
	char *enc = small_encoder();
	struct dt_bpe *b, *c;
	struct dt_error err;

	write_file("encoder.json", enc);
	write_file("vocab.bpe", SMALL_MERGES);
	free(enc);
	b = load_ok("encoder.json");
	ck_assert_int_eq(dt_bpe_save(b, path_of("tokenizer.json"), &err),
			 DT_OK);
	c = load_ok("tokenizer.json");
	ck_assert_str_eq(dt_bpe_digest(b), dt_bpe_digest(c));
	ck_assert_int_eq(dt_bpe_size(c), 262);
	expect_ids(c, SMALL_TEXT, small_ids,
		   sizeof small_ids / sizeof small_ids[0]);
	dt_bpe_free(b);
	dt_bpe_free(c);
}
END_TEST

/* Loads name, expects DT_ERR_FORMAT and a message containing want. */
static void
expect_refused(const char *name, const char *want)
{
	struct dt_bpe *b = (struct dt_bpe *)1;
	struct dt_error err;

	dt_error_clear(&err);
	ck_assert_int_eq(dt_bpe_load(path_of(name), &b, &err), DT_ERR_FORMAT);
	ck_assert_ptr_null(b);
	ck_assert_msg(strstr(err.msg, want) != NULL, "message '%s' lacks "
		      "'%s'", err.msg, want);
	ck_assert_msg(strstr(err.msg, path_of(name)) != NULL ||
		      strstr(err.msg, "vocab.bpe") != NULL,
		      "message '%s' names no file", err.msg);
}

START_TEST(malformed_refused)
{
	char *enc = small_encoder();
	char want[700];

	write_file("encoder.json", enc);
	free(enc);
	/* a merge naming a token the vocabulary lacks: "zz", line 3,
	 * column 3 */
	write_file("vocab.bpe", "#version: 0.2\n\xC4\xA0 t\nh zz\n");
	snprintf(want, sizeof want, "%s:3:3: the merge names \"zz\"",
		 path_of("vocab.bpe"));
	expect_refused("encoder.json", want);
	/* truncated: the last line is one token; the space would be at
	 * column 2 */
	write_file("vocab.bpe", "#version: 0.2\n\xC4\xA0 t\nh");
	snprintf(want, sizeof want, "%s:3:2: expected a merge",
		 path_of("vocab.bpe"));
	expect_refused("encoder.json", want);
	/* truncated inside a character: U+0120 cut after its first byte */
	write_file("vocab.bpe", "#version: 0.2\nh e\n\xC4");
	snprintf(want, sizeof want, "%s:3:2: expected a merge",
		 path_of("vocab.bpe"));
	expect_refused("encoder.json", want);
	write_file("vocab.bpe", "h e\nh e\n");
	snprintf(want, sizeof want, "%s:2:1: the merge \"h e\" is already "
		 "merge 1", path_of("vocab.bpe"));
	expect_refused("encoder.json", want);
	/* the result of a merge missing: "ta" */
	write_file("vocab.bpe", "t a\n");
	snprintf(want, sizeof want, "%s:1:1: the merge's result \"ta\"",
		 path_of("vocab.bpe"));
	expect_refused("encoder.json", want);

	/* bad JSON: the second comma, line 2 column 9 */
	write_file("bad.json", "{\"a\": 0,\n\"b\": 1,,\n}");
	snprintf(want, sizeof want, "%s:2:8: invalid JSON", path_of("bad.json"));
	expect_refused("bad.json", want);
	write_file("cut.json", "{\"a\": 0,\n\"b\"");
	snprintf(want, sizeof want, "%s:2:4: invalid JSON",
		 path_of("cut.json"));
	expect_refused("cut.json", want);
	/* duplicate ids, named by key */
	write_file("dup.json", "{\"a\": 0, \"b\": 1, \"c\": 1}");
	expect_refused("dup.json", "\"c\": id 1 is also the id of \"b\"");
	write_file("gap.json", "{\"a\": 0, \"b\": 2, \"c\": 1, \"d\": 4}");
	expect_refused("gap.json", "\"d\": expected an id from 0 to 3");
	/* a byte missing, and a character outside the alphabet */
	write_file("few.json", "{\"a\": 0, \"b\": 1}");
	expect_refused("few.json", "no token for byte 0x00");
	write_file("wide.json", "{\"a\": 0, \"\\u4e2d\": 1}");
	expect_refused("wide.json", "\"\xE4\xB8\xAD\": character U+4E2D is "
		       "not in the byte-level alphabet");
	/* Hugging Face: places are keys */
	write_file("hf.json", "{\"model\": {\"type\": \"WordPiece\"}}");
	expect_refused("hf.json", "model.type: \"WordPiece\" is not a BPE");
	write_file("hf.json", "{\"model\": {\"vocab\": {\"a\": 0, \"b\": 0}, "
		   "\"merges\": []}}");
	expect_refused("hf.json", "model.vocab.\"b\": id 0 is also the id of "
		       "\"a\"");
}
END_TEST

/* The same small tokenizer as a tokenizer.json whose second merge names
 * an unknown token: refused naming model.merges[1]. */
START_TEST(hf_merge_unknown)
{
	char *enc = small_encoder();
	char *doc = dt_xcalloc(strlen(enc) + 256, 1);

	enc[strlen(enc) - 2] = '\0';	/* drop "}\n" */
	snprintf(doc, strlen(enc) + 256, "{\"model\": {\"type\": \"BPE\", "
		 "\"vocab\": %s}, \"merges\": [\"h e\", [\"q\", \"zz\"]]}}",
		 enc);
	write_file("tokenizer.json", doc);
	free(enc);
	free(doc);
	expect_refused("tokenizer.json", "model.merges[1]: the merge names "
		       "\"zz\"");
}
END_TEST

static struct dt_bpe *
learn(const char *text, int64_t size)
{
	struct dt_bpe_trainer *t = dt_bpe_trainer_new();
	struct dt_bpe *b = NULL;
	struct dt_error err;

	ck_assert_int_eq(dt_bpe_trainer_feed(t, (const unsigned char *)text,
					     strlen(text), &err), DT_OK);
	ck_assert_int_eq(dt_bpe_trainer_finish(t, size, &b, &err), DT_OK);
	dt_bpe_trainer_free(t);
	return b;
}

static void
expect_piece(const struct dt_bpe *b, int64_t id, const char *want)
{
	const unsigned char *p;
	size_t n = dt_bpe_piece(b, id, &p);

	ck_assert_msg(n == strlen(want) && memcmp(p, want, n) == 0,
		      "token %lld is '%.*s', expected '%s'", (long long)id,
		      (int)n, p, want);
}

/* "abab abab" has the words "abab" and " abab". Pair counts: "ab" 4,
 * "ba" 2, " a" 1. Merge 1: "ab" (256); the words are [ab ab] and
 * [" " ab ab]: "ab ab" 2, " ab" 1. Merge 2: "abab" (257); then only
 * " abab" (1) is left. Merge 3: " abab" (258). Then every word is one
 * token: 259 ids at most. */
START_TEST(learn_exact_or_fewer)
{
	struct dt_bpe *b = learn("abab abab", 258);
	struct dt_error err;
	struct dt_bpe_trainer *t;

	ck_assert_int_eq(dt_bpe_size(b), 258);
	ck_assert_int_eq(dt_bpe_merges(b), 2);
	expect_piece(b, 0, "!");
	expect_piece(b, 220, " ");
	expect_piece(b, 256, "ab");
	expect_piece(b, 257, "abab");
	dt_bpe_free(b);

	b = learn("abab abab", 100000);
	ck_assert_int_eq(dt_bpe_size(b), 259);
	expect_piece(b, 258, " abab");
	dt_bpe_free(b);

	b = learn("abab abab", 256);
	ck_assert_int_eq(dt_bpe_size(b), 256);
	dt_bpe_free(b);

	t = dt_bpe_trainer_new();
	ck_assert_int_eq(dt_bpe_trainer_finish(t, 255, &b, &err),
			 DT_ERR_USAGE);
	ck_assert_ptr_null(b);
	dt_bpe_trainer_free(t);
}
END_TEST

/* Ties go to the smaller ids. "xy zw" has the words "xy" and " zw",
 * every pair once; GPT-2's ids: w 86, x 87, y 88, z 89, space 220. The
 * pairs (87, 88) "xy", (220, 89) " z" and (89, 86) "zw" tie at 1: the
 * smaller first id wins, "xy" (256); then "zw" (257, first id 89 < 220);
 * then " zw" (258). */
START_TEST(learn_ties)
{
	struct dt_bpe *b = learn("xy zw", 259);

	expect_piece(b, 256, "xy");
	expect_piece(b, 257, "zw");
	expect_piece(b, 258, " zw");
	dt_bpe_free(b);
}
END_TEST

static uint64_t
lcg(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return *s >> 33;
}

static void
round_trip(struct dt_bpe *b, const unsigned char *text, size_t n)
{
	int32_t *ids = dt_xmalloc(n + 1, sizeof *ids);
	int32_t *again = dt_xmalloc(n + 1, sizeof *ids);
	unsigned char *back = dt_xmalloc(n + 1, 1);
	int64_t n_ids, n_again;
	size_t k = 0;
	struct dt_error err;

	ck_assert_int_eq(dt_bpe_encode(b, text, n, ids, &n_ids, &err), DT_OK);
	for (int64_t i = 0; i < n_ids; i++) {
		const unsigned char *p;
		size_t len;

		ck_assert_int_ge(ids[i], 0);
		ck_assert_int_lt(ids[i], dt_bpe_size(b));
		len = dt_bpe_piece(b, ids[i], &p);
		ck_assert_uint_le(k + len, n);
		memcpy(back + k, p, len);
		k += len;
	}
	ck_assert_uint_eq(k, n);
	ck_assert_int_eq(memcmp(back, text, n), 0);
	ck_assert_int_eq(dt_bpe_encode(b, text, n, again, &n_again, &err),
			 DT_OK);
	ck_assert_int_eq(n_again, n_ids);
	ck_assert_int_eq(memcmp(again, ids, (size_t)n_ids * sizeof *ids), 0);
	free(ids);
	free(again);
	free(back);
}

START_TEST(round_trips)
{
	static const char *words[] = {
		"the ", "quick ", "brown ", "fox's ", "jumps\n", "  ", "42 ",
		"caf\xC3\xA9 ", "\xE4\xB8\xAD\xE6\x96\x87 ", "!!", "don't ",
	};
	static const unsigned char bad[] = {
		0xFF, 0xFE, 'a', 0xC3, 0x28, ' ', 0xED, 0xA0, 0x80, ' ', 0xF4,
		0x90, 0x80, 0x80, 0xC0, 0xAF, 0xE2, 0x82, ' ', 0xE2, 0x82,
	};
	size_t n = 200000;
	unsigned char *text = dt_xmalloc(n, 1);
	char *corpus = dt_xcalloc(60000, 1);
	uint64_t s = 7;
	struct dt_bpe *b;

	while (strlen(corpus) < 59000)
		strcat(corpus, words[lcg(&s) % (sizeof words / sizeof *words)]);
	b = learn(corpus, 400);
	ck_assert_int_gt(dt_bpe_merges(b), 50);
	round_trip(b, (const unsigned char *)corpus, strlen(corpus));
	for (size_t i = 0; i < n; i++)
		text[i] = (unsigned char)lcg(&s);
	round_trip(b, text, n);
	round_trip(b, bad, sizeof bad);
	memset(text, ' ', n);		/* one long word of spaces */
	round_trip(b, text, n);
	memset(text, 0xFF, 1000);	/* one long run that is not UTF-8 */
	round_trip(b, text, 1000);
	round_trip(b, (const unsigned char *)"", 0);
	free(text);
	free(corpus);
	dt_bpe_free(b);
}
END_TEST

static Suite *
bpe_suite(void)
{
	Suite *s = suite_create("bpe");
	TCase *tc = tcase_create("bpe");

	tcase_add_test(tc, gpt2_files_hand_worked);
	tcase_add_test(tc, hf_file_same_ids);
	tcase_add_test(tc, malformed_refused);
	tcase_add_test(tc, hf_merge_unknown);
	tcase_add_test(tc, learn_exact_or_fewer);
	tcase_add_test(tc, learn_ties);
	tcase_add_test(tc, round_trips);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr;
	int failed;

	make_tmpdir();
	sr = srunner_create(bpe_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	{
		char cmd[700];

		snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
		if (system(cmd) != 0)
			failed++;
	}
	return failed == 0 ? 0 : 1;
}

/* SPDX-License-Identifier: MIT */
/* test_layer_registry.c - every registered layer type has a gradient check.
 *
 * Walks the layer and loss lists of job/layer_types.h: each entry must have
 * a graph type in the registry (dt_layer_for_kind, dt_layer_for_loss) whose
 * ops->kind is the entry's word, and each word of `type:` and of model.loss
 * must have passed a finite-difference check of gradcheck.c in one of the
 * layer suites, which record the types they checked in
 * tests/unit/NAME.gradcheck as they run (local.mk runs them first). A type
 * that cannot have one goes in `exempt` below with the reason. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gradcheck.h"
#include "graph/layer.h"

/* The suites whose gradient checks count (their main calls gc_record_to). */
static const char *const suites[] = {
	"test_graph", "test_graph_layers", "test_graph_nlp", NULL,
};

/* Types without a gradient check, each with the reason; none today. */
static const struct {
	const char *word, *reason;
} exempt[] = {
	{ NULL, NULL },
};

/* Every word of `type:` (with its kind) and of model.loss. */
struct word {
	const char *text;
	const char *kind;	/* the entry's graph type, ops->kind */
};

#define TYPE_WORD(text, ACT, word) { text, #word },
#define KIND_WORDS(NAME, word, words, ...) words(TYPE_WORD, word, word)
#define LOSS_WORD(NAME, word, ops) { #word, #word },
static const struct word words[] = {
	DT_LAYER_TYPES(KIND_WORDS) DT_LOSS_TYPES(LOSS_WORD)
};
#define N_WORDS ((int)(sizeof words / sizeof words[0]))

/* The types the suites recorded, one per line, into buf; fails when a
 * suite has not run. */
static void
read_records(char *buf, size_t size)
{
	size_t n = 0;

	buf[0] = '\0';
	for (int s = 0; suites[s] != NULL; s++) {
		char path[4096];
		FILE *f;

		gc_record_path(suites[s], path, sizeof path);
		f = fopen(path, "r");
		ck_assert_msg(f != NULL, "%s: not found; run make check "
			      "TESTS=tests/unit/%s first", path, suites[s]);
		buf[n++] = '\n';
		n += fread(buf + n, 1, size - n - 2, f);
		ck_assert_msg(!ferror(f) && n < size - 2, "%s: read", path);
		fclose(f);
		buf[n] = '\0';
	}
	buf[n++] = '\n';
	buf[n] = '\0';
}

/* Whether line "\ntext\n" is in records. */
static bool
recorded(const char *records, const char *text)
{
	char line[128];

	snprintf(line, sizeof line, "\n%s\n", text);
	return strstr(records, line) != NULL;
}

static const char *
exempt_reason(const char *text)
{
	for (int i = 0; exempt[i].word != NULL; i++)
		if (strcmp(exempt[i].word, text) == 0)
			return exempt[i].reason;
	return NULL;
}

/* The registry holds a graph type for every entry, under its word. */
START_TEST(test_registry_matches_list)
{
	int n_kinds = 0;

#define CHECK_KIND(NAME, word, ...)                                         \
	do {                                                                \
		const struct dt_layer_ops *ops =                            \
			dt_layer_for_kind(DT_LAYER_##NAME);                 \
		ck_assert_msg(ops == &dt_layer_##word,                      \
			      "DT_LAYER_" #NAME ": not dt_layer_" #word);   \
		ck_assert_str_eq(ops->kind, #word);                         \
		n_kinds++;                                                  \
	} while (0);
	DT_LAYER_TYPES(CHECK_KIND)
#undef CHECK_KIND
#define CHECK_LOSS(NAME, word, ops_)                                        \
	do {                                                                \
		const struct dt_layer_ops *ops =                            \
			dt_layer_for_loss(DT_LOSS_##NAME);                  \
		ck_assert_msg(ops == &dt_layer_##ops_,                      \
			      "DT_LOSS_" #NAME ": not dt_layer_" #ops_);    \
		ck_assert_str_eq(ops->kind, #word);                         \
	} while (0);
	DT_LOSS_TYPES(CHECK_LOSS)
#undef CHECK_LOSS
	ck_assert_ptr_null(dt_layer_for_kind((enum dt_layer_kind)n_kinds));
	ck_assert_ptr_null(dt_layer_for_kind((enum dt_layer_kind)-1));
}
END_TEST

/* Every word has passed a gradient check, or is exempt with a reason. */
START_TEST(test_every_type_checked)
{
	static char records[1 << 16];
	int missing = 0;

	read_records(records, sizeof records);
	for (int i = 0; i < N_WORDS; i++) {
		const char *reason = exempt_reason(words[i].text);

		if (reason != NULL) {
			ck_assert_msg(reason[0] != '\0', "%s: exempt without "
				      "a reason", words[i].text);
			ck_assert_msg(!recorded(records, words[i].text),
				      "%s: exempt but checked; drop it from "
				      "exempt", words[i].text);
			continue;
		}
		if (!recorded(records, words[i].text)) {
			fprintf(stderr, "layer type %s (graph type %s) has no "
				"gradient check (gc_check) in %s, %s or %s\n",
				words[i].text, words[i].kind, suites[0],
				suites[1], suites[2]);
			missing++;
		}
	}
	ck_assert_msg(missing == 0, "%d layer types without a gradient check",
		      missing);
	/* Every record names a type of the list: a check of something the
	 * list does not know is a stale record or a typo. */
	for (const char *p = records; *p != '\0'; p++) {
		size_t len = strcspn(p, "\n");
		bool known = len == 0;

		for (int i = 0; !known && i < N_WORDS; i++)
			known = strlen(words[i].text) == len &&
				strncmp(p, words[i].text, len) == 0;
		ck_assert_msg(known, "recorded %.*s is not a layer type",
			      (int)len, p);
		p += len;
		if (*p == '\0')
			break;
	}
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("layer_registry");
	TCase *tc = tcase_create("registry");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_registry_matches_list);
	tcase_add_test(tc, test_every_type_checked);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

/* SPDX-License-Identifier: MIT */
/* scratch_dir.h - the temporary directory of a unit suite whose tests
 * write their files side by side in one flat directory (test_data.c,
 * test_formats.c): made under $TMPDIR (else /tmp) by a test case's
 * unchecked fixture, before Check forks, and emptied and removed after. */
#ifndef DT_TEST_SCRATCH_DIR_H
#define DT_TEST_SCRATCH_DIR_H

#include <stddef.h>

/* Makes $TMPDIR/dtrain-test-SUITE-XXXXXX (mkdtemp) and writes its path
 * into dir[0..size). A fixture cannot fail a test: when the path does not
 * fit or mkdtemp fails, prints why (naming suite) and aborts. */
void scratch_dir_make(char *dir, size_t size, const char *suite);

/* Removes every entry of dir (plain files only: the suites make no
 * subdirectories), then dir itself. Quietly does nothing for a directory
 * that is not there. */
void scratch_dir_remove(const char *dir);

#endif

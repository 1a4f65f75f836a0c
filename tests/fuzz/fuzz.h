/* SPDX-License-Identifier: MIT */
/* fuzz.h - what the libFuzzer targets in tests/fuzz/ share.
 *
 * Each fuzz_NAME.c defines LLVMFuzzerTestOneInput, the entry point of
 * libFuzzer (llvm.org/docs/LibFuzzer.html). tests/fuzz/run.sh links each
 * with clang's -fsanitize=fuzzer; make check links the same file with
 * replay.c instead, which feeds it every file of the seed corpus and of
 * tests/fuzz/regress/NAME/, so the targets build and their inputs pass
 * without clang. A target returns 0 for every input and aborts only on a
 * broken promise of the code it drives (the sanitizers catch the rest). */
#ifndef DT_TESTS_FUZZ_H
#define DT_TESTS_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Writes data (size bytes) to this process's scratch file number slot
 * (0..3: a target that needs two files uses two), replacing what it held,
 * and returns its path (a static string per slot, valid until the next
 * call for that slot). The files live in $DTRAIN_FUZZ_TMP, else $TMPDIR,
 * else /tmp, named dtrain-fuzz-PID-SLOT, and are removed at exit. Aborts
 * if the file cannot be written: a fuzz run without its file is no run. */
const char *dt_fuzz_file(int slot, const void *data, size_t size);

/* Aborts with "fuzz: what" on stderr when cond is false: for properties
 * a target checks beyond memory safety (a round trip that must agree). */
void dt_fuzz_check(int cond, const char *what);

#endif

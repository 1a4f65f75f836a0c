/* SPDX-License-Identifier: MIT */
/* gen.c - writes dtrain's bash completion script to stdout; run by the
 * build (completion/local.mk), not installed. */
#include <stdio.h>

#include "cmd/cmd.h"

int
main(void)
{
	dt_cmd_write_completion(stdout);
	return fflush(stdout) == 0 && !ferror(stdout) ? 0 : 1;
}

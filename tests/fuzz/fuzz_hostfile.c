/* SPDX-License-Identifier: MIT */
/* fuzz_hostfile.c - an elastic launch's hostfile (dt_hosts_read,
 * launch/hosts.h).
 *
 * Any bytes must read or fail with DT_ERR_USAGE (or DT_ERR_IO) and a
 * message. What reads must hold hosts of 1 to DT_HOSTS_SLOTS_MAX slots
 * whose sum stays within it, with names that fit; the hostfile written
 * back (dt_hosts_write) must read again as the same hosts and slots, and
 * the placement of every slot's rank must fit its buffer. */
#include "fuzz.h"

#include <string.h>

#include "launch/hosts.h"
#include "util/status.h"

static int
same_hosts(const struct dt_hosts *a, const struct dt_hosts *b)
{
	if (a->n != b->n)
		return 0;
	for (int i = 0; i < a->n; i++)
		if (strcmp(a->h[i].name, b->h[i].name) != 0 ||
		    a->h[i].slots != b->h[i].slots)
			return 0;
	return 1;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dt_hosts h, again;
	struct dt_error err;
	enum dt_status st;
	const char *back;
	char where[512];
	long sum = 0;

	dt_error_clear(&err);
	st = dt_hosts_read(dt_fuzz_file(0, data, size), &h, &err);
	dt_fuzz_check(st == DT_OK || ((st == DT_ERR_USAGE ||
				       st == DT_ERR_IO) && err.msg[0] != '\0'),
		      "a hostfile refused without a usage error and a message");
	if (st != DT_OK) {
		dt_fuzz_check(h.n == 0 && h.h == NULL, "a refused hostfile "
			      "left hosts behind");
		return 0;
	}
	dt_fuzz_check(h.n >= 1, "a hostfile read with no host");
	for (int i = 0; i < h.n; i++) {
		dt_fuzz_check(h.h[i].slots >= 1 &&
			      h.h[i].slots <= DT_HOSTS_SLOTS_MAX,
			      "a host's slots out of range");
		dt_fuzz_check(h.h[i].name[0] != '\0' &&
			      strlen(h.h[i].name) < DT_HOST_NAME_MAX,
			      "a host's name empty or too long");
		sum += h.h[i].slots;
	}
	dt_fuzz_check(sum <= DT_HOSTS_SLOTS_MAX &&
		      sum == dt_hosts_slots(&h), "the slots' sum is off");
	dt_fuzz_check(dt_hosts_placement(&h, (int)sum, where, sizeof where) >=
		      1 && strlen(where) < sizeof where, "placement");
	back = dt_fuzz_file(1, "", 0);
	dt_fuzz_check(dt_hosts_write(&h, back, &err) == DT_OK,
		      "the hosts cannot be written back");
	dt_fuzz_check(dt_hosts_read(back, &again, &err) == DT_OK &&
		      same_hosts(&h, &again),
		      "the written hostfile does not read as the same hosts");
	dt_hosts_fini(&again);
	dt_hosts_fini(&h);
	return 0;
}

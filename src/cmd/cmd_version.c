/* SPDX-License-Identifier: MIT */
/* cmd_version.c - `dtrain --version`: the version, the licence and the build
 * configuration (each library's version as it runs, not only as it was
 * compiled against, since a shared library can be swapped under dtrain),
 * the kind of CPU dtrain's kernels take this one for and where the
 * products go on it. */
#include "cmd/cmd.h"

#include <cblas.h>
#include <curl/curl.h>
#include <json.h>
#include <stdio.h>
#include <string.h>
#include <yaml.h>
#include <zlib.h>

#include "config.h"
#include "comm/comm.h"
#include "graph/kern_paths.h"
#include "util/cpu_features.h"

/* The compiler's name and version as its predefined macros give them. */
static const char *
compiler(void)
{
#if defined(__clang__)
	return "clang " __clang_version__;
#elif defined(__GNUC__)
	return "gcc " __VERSION__;
#else
	return "unknown";
#endif
}

void
dt_cmd_print_version(FILE *out)
{
	char mpi[512], blas[256], cpu[256], paths[1024];
	const char *b = openblas_get_config();

	snprintf(blas, sizeof blas, "%s", b != NULL ? b : "unknown");
	/* openblas_get_config() may end in a blank. */
	for (size_t n = strlen(blas); n > 0 && blas[n - 1] == ' '; n--)
		blas[n - 1] = '\0';
	dt_comm_mpi_version(mpi, sizeof mpi);
	dt_cpu_describe(cpu, sizeof cpu);
	dt_kern_paths(paths, sizeof paths, openblas_get_corename());
	fprintf(out, "dtrain %s\n", PACKAGE_VERSION);
	fputs("License: MIT License; see COPYING\n", out);
	fprintf(out, "BLAS: %s\n", blas);
	fprintf(out, "MPI: %s\n", mpi);
	fprintf(out, "mpirun: %s\n", DT_MPIRUN);
	fprintf(out, "libyaml: %s\n", yaml_get_version_string());
	fprintf(out, "zlib: %s\n", zlibVersion());
	fprintf(out, "libcurl: %s\n", curl_version());
	fprintf(out, "json-c: %s\n", json_c_version());
	fprintf(out, "compiler: %s\n", compiler());
	fprintf(out, "CPU: %s\n", cpu);
	fprintf(out, "products: %s\n", paths);
	fprintf(out, "sanitizers: %s\n", DT_BUILD_SANITIZERS);
	fprintf(out, "debug: %s\n", DT_BUILD_DEBUG);
	fprintf(out, "werror: %s\n", DT_BUILD_WERROR);
}

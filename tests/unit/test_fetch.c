/* SPDX-License-Identifier: MIT */
/* test_fetch.c - Check suite for src/data/fetch.c: local sources, cache
 * names and places, and every way a download can go wrong, against
 * tests/http_server.py on 127.0.0.1 (started here with fork/exec; it
 * stops by itself when this program ends). After each failure the cache
 * must hold no file at a final name; after each success the file must
 * have the right sha256. Skips (exit 77) when python3 is not on PATH. */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "data/fetch.h"
#include "data/data_priv.h"
#include "util/alloc.h"

#define DATA_LEN 300000

/* Set up once per test case by an unchecked fixture, before Check forks. */
static char tmpdir[512];
static char wwwdir[600];
static char logpath[600];
static char server_script[PATH_MAX];
static char data_sha[65];
static int port;
static pid_t server_pid;

/* ---- helpers ------------------------------------------------------------ */

static void
die(const char *what)
{
	perror(what);
	abort();
}

static void
write_bytes(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");

	if (f == NULL || fwrite(p, 1, n, f) != n || fclose(f) != 0)
		die(path);
}

/* The served file: DATA_LEN bytes of a fixed pseudo-random sequence. */
static unsigned char *
make_data(void)
{
	unsigned char *p = dt_xmalloc(DATA_LEN, 1);
	uint32_t s = 12345;

	for (size_t i = 0; i < DATA_LEN; i++) {
		s = s * 1664525u + 1013904223u;
		p[i] = (unsigned char)(s >> 24);
	}
	return p;
}

static int
find_python(char *out, size_t size)
{
	const char *path = getenv("PATH");
	char *copy, *dir, *save = NULL;
	int found = 0;

	if (path == NULL)
		return 0;
	copy = dt_xstrdup(path);
	for (dir = strtok_r(copy, ":", &save); dir != NULL;
	     dir = strtok_r(NULL, ":", &save)) {
		snprintf(out, size, "%s/python3", dir);
		if (access(out, X_OK) == 0) {
			found = 1;
			break;
		}
	}
	free(copy);
	return found;
}

/* Starts the server with extra arguments (NULL-terminated, up to 4) and
 * returns its port; *pid receives its process id. */
static int
start_server(const char *const *extra, pid_t *pid)
{
	const char *argv[16];
	char py[PATH_MAX], line[32];
	struct pollfd pfd;
	size_t n = 0;
	int fds[2], i = 0;

	if (!find_python(py, sizeof py))
		die("python3");
	argv[i++] = "python3";
	argv[i++] = server_script;
	argv[i++] = "--root";
	argv[i++] = wwwdir;
	argv[i++] = "--log";
	argv[i++] = logpath;
	argv[i++] = "--max-seconds";
	argv[i++] = "120";
	while (extra != NULL && *extra != NULL)
		argv[i++] = *extra++;
	argv[i] = NULL;

	if (pipe(fds) != 0)
		die("pipe");
	*pid = fork();
	if (*pid < 0)
		die("fork");
	if (*pid == 0) {
		dup2(fds[1], STDOUT_FILENO);
		close(fds[0]);
		close(fds[1]);
		execv(py, (char *const *)argv);
		_exit(127);
	}
	close(fds[1]);
	pfd.fd = fds[0];
	pfd.events = POLLIN;
	/* The port comes as one line once the server listens. */
	while (n < sizeof line - 1) {
		ssize_t r;

		if (poll(&pfd, 1, 20000) <= 0) {
			fprintf(stderr, "test_fetch: no server\n");
			abort();
		}
		r = read(fds[0], line + n, 1);
		if (r <= 0) {
			fprintf(stderr, "test_fetch: the server exited\n");
			abort();
		}
		if (line[n] == '\n')
			break;
		n++;
	}
	line[n] = '\0';
	close(fds[0]);
	return atoi(line);
}

static void
stop_server(pid_t pid)
{
	if (pid > 0) {
		kill(pid, SIGTERM);
		waitpid(pid, NULL, 0);
	}
}

static void
remove_tree(const char *path)
{
	struct stat sb;
	DIR *d;
	struct dirent *e;
	char sub[PATH_MAX];

	if (lstat(path, &sb) != 0)
		return;
	if (!S_ISDIR(sb.st_mode)) {
		unlink(path);
		return;
	}
	d = opendir(path);
	if (d != NULL) {
		while ((e = readdir(d)) != NULL) {
			if (strcmp(e->d_name, ".") == 0 ||
			    strcmp(e->d_name, "..") == 0)
				continue;
			snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
			remove_tree(sub);
		}
		closedir(d);
	}
	rmdir(path);
}

static void
setup(void)
{
	const char *base = getenv("TMPDIR");
	const char *top = getenv("top_srcdir");
	unsigned char *data = make_data();
	char path[PATH_MAX];
	struct dt_error err;

	if (base == NULL || *base == '\0')
		base = "/tmp";
	snprintf(tmpdir, sizeof tmpdir, "%s/dtrain-test-fetch-XXXXXX", base);
	if (mkdtemp(tmpdir) == NULL)
		die(tmpdir);
	snprintf(wwwdir, sizeof wwwdir, "%s/www", tmpdir);
	snprintf(logpath, sizeof logpath, "%s/server.log", tmpdir);
	if (mkdir(wwwdir, 0777) != 0)
		die(wwwdir);
	snprintf(path, sizeof path, "%s/data.bin", wwwdir);
	write_bytes(path, data, DATA_LEN);
	free(data);
	if (dt_sha256_file(path, data_sha, &err) != DT_OK) {
		fprintf(stderr, "%s\n", err.msg);
		abort();
	}
	snprintf(server_script, sizeof server_script, "%s/tests/http_server.py",
		 top != NULL && *top != '\0' ? top : ".");
	port = start_server(NULL, &server_pid);
}

static void
teardown(void)
{
	stop_server(server_pid);
	server_pid = 0;
	remove_tree(tmpdir);
}

/* Options for fast tests: short waits, a stall noticed within a second
 * (the rate limit is far below loopback speed and far above a stall). */
static void
test_opts(struct dt_fetch_opts *o, char *cache, const char *name)
{
	snprintf(cache, PATH_MAX, "%s/cache-%s", tmpdir, name);
	dt_fetch_opts_init(o);
	o->cache_dir = cache;
	o->retries = 2;
	o->retry_delay_ms = 10;
	o->retry_max_delay_ms = 40;
	o->connect_timeout_s = 5;
	o->low_speed_limit = 100000;
	o->low_speed_time_s = 1;
}

static void
url(char *out, const char *path)
{
	snprintf(out, PATH_MAX, "http://127.0.0.1:%d%s", port, path);
}

/* Lines of the server log that contain needle. */
static int
log_count(const char *needle)
{
	FILE *f = fopen(logpath, "r");
	char line[1024];
	int n = 0;

	if (f == NULL)
		return 0;
	while (fgets(line, sizeof line, f) != NULL)
		if (strstr(line, needle) != NULL)
			n++;
	fclose(f);
	return n;
}

/* Files in the cache directory that end in suffix ("" = final names:
 * neither .part, .part.meta nor .lock; ".meta" = .part.meta records). */
static int
cache_count(const char *dir, const char *suffix)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (d == NULL)
		return 0;
	while ((e = readdir(d)) != NULL) {
		size_t len = strlen(e->d_name);
		int part = len > 5 && strcmp(e->d_name + len - 5, ".part") == 0;
		int lock = len > 5 && strcmp(e->d_name + len - 5, ".lock") == 0;

		int meta = len > 10 &&
			   strcmp(e->d_name + len - 10, ".part.meta") == 0;

		/* A .part file's record is counted on its own. */
		if (meta || strcmp(suffix, ".meta") == 0) {
			n += meta && strcmp(suffix, ".meta") == 0;
			continue;
		}

		if (e->d_name[0] == '.')
			continue;
		if (*suffix == '\0' ? !part && !lock :
		    strcmp(suffix, ".part") == 0 ? part : lock)
			n++;
	}
	closedir(d);
	return n;
}

static void
assert_sha(const char *path, const char *want)
{
	char hex[65];
	struct dt_error err;

	ck_assert_int_eq(dt_sha256_file(path, hex, &err), DT_OK);
	ck_assert_str_eq(hex, want);
}

static void
assert_msg_has(const struct dt_error *err, const char *needle)
{
	ck_assert_msg(strstr(err->msg, needle) != NULL,
		      "message \"%s\" lacks \"%s\"", err->msg, needle);
}

/* The path the cache would use for u, and its .part. */
static void
cache_file(const char *u, const struct dt_fetch_opts *o, char *out)
{
	struct dt_fetch_source src = { .url = u };
	struct dt_error err;
	int cached;

	ck_assert_int_eq(dt_fetch_is_cached(&src, o, out, PATH_MAX, &cached,
					    &err), DT_OK);
}

static void
write_part_raw(const char *final, const unsigned char *p, size_t n)
{
	char part[PATH_MAX + 8];

	snprintf(part, sizeof part, "%s.part", final);
	write_bytes(part, p, n);
}

/* FINAL.part with its record FINAL.part.meta (fetch.c): the validator of
 * the response it began (may be "") and the total size (-1: unknown). */
static void
write_part_as(const char *final, const unsigned char *p, size_t n,
	      const char *validator)
{
	char meta[PATH_MAX + 16], text[256];

	write_part_raw(final, p, n);
	snprintf(meta, sizeof meta, "%s.part.meta", final);
	snprintf(text, sizeof text, "%s\n-1\n", validator);
	write_bytes(meta, text, strlen(text));
}

/* A .part of known origin but no validator: resumed unconditionally. */
static void
write_part(const char *final, const unsigned char *p, size_t n)
{
	write_part_as(final, p, n, "");
}

/* ---- local sources and names ------------------------------------------- */

START_TEST(test_sha256_known)
{
	char path[PATH_MAX], hex[65] = "untouched";
	struct dt_error err;

	snprintf(path, sizeof path, "%s/abc.txt", tmpdir);
	write_bytes(path, "abc", 3);
	assert_sha(path, "ba7816bf8f01cfea414140de5dae2223"
		   "b00361a396177a9cb410ff61f20015ad");
	snprintf(path, sizeof path, "%s/empty", tmpdir);
	write_bytes(path, "", 0);
	assert_sha(path, "e3b0c44298fc1c149afbf4c8996fb924"
		   "27ae41e4649b934ca495991b7852b855");
	snprintf(path, sizeof path, "%s/missing", tmpdir);
	ck_assert_int_eq(dt_sha256_file(path, hex, &err), DT_ERR_IO);
	assert_msg_has(&err, "missing: cannot open: No such file");
	ck_assert_str_eq(hex, "untouched");
}
END_TEST

START_TEST(test_local_path)
{
	char path[PATH_MAX], furl[PATH_MAX + 8], out[PATH_MAX], want[300];
	struct dt_fetch_source src = { 0 };
	struct dt_error err;

	snprintf(path, sizeof path, "%s/www/data.bin", tmpdir);
	src.url = path;
	src.sha256 = data_sha;
	src.size = DATA_LEN;
	ck_assert_int_eq(dt_fetch(&src, NULL, out, sizeof out, &err), DT_OK);
	ck_assert_str_eq(out, path);

	snprintf(furl, sizeof furl, "file://%s", path);
	src.url = furl;
	ck_assert_int_eq(dt_fetch(&src, NULL, out, sizeof out, &err), DT_OK);
	ck_assert_str_eq(out, path);

	src.url = path;
	src.sha256 = "00000000000000000000000000000000"
		     "00000000000000000000000000000000";
	strcpy(out, "untouched");
	ck_assert_int_eq(dt_fetch(&src, NULL, out, sizeof out, &err),
			 DT_ERR_DATA);
	snprintf(want, sizeof want, ": sha256 mismatch: expected %s, got %s",
		 src.sha256, data_sha);
	assert_msg_has(&err, want);
	ck_assert_str_eq(out, "untouched");

	src.sha256 = NULL;
	src.size = 5;
	ck_assert_int_eq(dt_fetch(&src, NULL, out, sizeof out, &err),
			 DT_ERR_DATA);
	assert_msg_has(&err, "data.bin: size mismatch: expected 5 bytes, "
		       "got 300000");

	src.size = 0;
	ck_assert_int_eq(dt_fetch(&src, NULL, out, 10, &err), DT_ERR_USAGE);
	assert_msg_has(&err, "path longer than 9 bytes");

	snprintf(path, sizeof path, "%s/nothing-here", tmpdir);
	ck_assert_int_eq(dt_fetch(&src, NULL, out, sizeof out, &err),
			 DT_ERR_IO);
	assert_msg_has(&err, "nothing-here: cannot open: No such file");

	src.url = tmpdir;
	ck_assert_int_eq(dt_fetch(&src, NULL, out, sizeof out, &err),
			 DT_ERR_IO);
	assert_msg_has(&err, "not a regular file");
}
END_TEST

START_TEST(test_bad_sources)
{
	char out[PATH_MAX];
	struct dt_error err;
	struct dt_fetch_source src = { .url = "ftp://example.org/x" };

	ck_assert_int_eq(dt_fetch(&src, NULL, out, sizeof out, &err),
			 DT_ERR_USAGE);
	ck_assert_str_eq(err.msg, "ftp://example.org/x: unsupported URL "
			 "scheme \"ftp\": use a path, http:// or https://");
	src.url = "http:///x";
	ck_assert_int_eq(dt_fetch(&src, NULL, out, sizeof out, &err),
			 DT_ERR_USAGE);
	ck_assert_str_eq(err.msg, "http:///x: the URL has no host");
	src.url = "file://relative";
	ck_assert_int_eq(dt_fetch(&src, NULL, out, sizeof out, &err),
			 DT_ERR_USAGE);
	src.url = "http://example.org/x";
	src.sha256 = "abc";
	ck_assert_int_eq(dt_fetch(&src, NULL, out, sizeof out, &err),
			 DT_ERR_USAGE);
	ck_assert_str_eq(err.msg, "http://example.org/x: sha256 must be 64 "
			 "hex digits, found \"abc\"");
	src.url = "";
	src.sha256 = NULL;
	ck_assert_int_eq(dt_fetch(&src, NULL, out, sizeof out, &err),
			 DT_ERR_USAGE);
}
END_TEST

START_TEST(test_cache_names_and_places)
{
	struct dt_fetch_opts o;
	struct dt_fetch_source src = {
		.url = "http://example.org/a/b.tar.gz?x=1#f"
	};
	char dir[PATH_MAX], want[PATH_MAX + 40], out[PATH_MAX];
	char out2[PATH_MAX];
	struct dt_error err;
	const char *base;
	int cached = -1;

	/* Pure names: nothing is fetched and no directory is made. */
	dt_fetch_opts_init(&o);
	snprintf(dir, sizeof dir, "%s/env-cache", tmpdir);
	setenv("DTRAIN_CACHE", dir, 1);
	ck_assert_int_eq(dt_fetch_is_cached(&src, &o, out, sizeof out,
					    &cached, &err), DT_OK);
	ck_assert_int_eq(cached, 0);
	snprintf(want, sizeof want, "%s/", dir);
	ck_assert_int_eq(strncmp(out, want, strlen(want)), 0);
	base = out + strlen(want);
	ck_assert_uint_eq(strlen(base), 16 + 1 + strlen("b.tar.gz"));
	ck_assert_uint_eq(strspn(base, "0123456789abcdef"), 16);
	ck_assert_str_eq(base + 16, "-b.tar.gz");

	/* The name depends on the whole URL, query included. */
	src.url = "http://example.org/a/b.tar.gz?x=2";
	ck_assert_int_eq(dt_fetch_is_cached(&src, &o, out2, sizeof out2,
					    &cached, &err), DT_OK);
	ck_assert_str_ne(out, out2);
	ck_assert_str_eq(out2 + strlen(out2) - 9, "-b.tar.gz");

	src.url = "https://example.org";
	ck_assert_int_eq(dt_fetch_is_cached(&src, &o, out, sizeof out,
					    &cached, &err), DT_OK);
	ck_assert_str_eq(out + strlen(out) - 6, "-index");
	src.url = "https://example.org/x/..";
	ck_assert_int_eq(dt_fetch_is_cached(&src, &o, out, sizeof out,
					    &cached, &err), DT_OK);
	ck_assert_str_eq(out + strlen(out) - 3, "-_.");
	src.url = "https://example.org/we%20ird$name";
	ck_assert_int_eq(dt_fetch_is_cached(&src, &o, out, sizeof out,
					    &cached, &err), DT_OK);
	ck_assert_str_eq(out + strlen(out) - 14, "-we_20ird_name");

	unsetenv("DTRAIN_CACHE");
	setenv("XDG_CACHE_HOME", "/xdg", 1);
	ck_assert_int_eq(dt_fetch_is_cached(&src, &o, out, sizeof out,
					    &cached, &err), DT_OK);
	ck_assert_int_eq(strncmp(out, "/xdg/dtrain/", 12), 0);
	setenv("XDG_CACHE_HOME", "relative", 1);
	setenv("HOME", "/home/someone", 1);
	ck_assert_int_eq(dt_fetch_is_cached(&src, &o, out, sizeof out,
					    &cached, &err), DT_OK);
	ck_assert_int_eq(strncmp(out, "/home/someone/.cache/dtrain/", 28), 0);
	unsetenv("XDG_CACHE_HOME");
	unsetenv("HOME");
	ck_assert_int_eq(dt_fetch_is_cached(&src, &o, out, sizeof out,
					    &cached, &err), DT_ERR_IO);
	assert_msg_has(&err, "set DTRAIN_CACHE");
	o.cache_dir = "/explicit";
	ck_assert_int_eq(dt_fetch_is_cached(&src, &o, out, sizeof out,
					    &cached, &err), DT_OK);
	ck_assert_int_eq(strncmp(out, "/explicit/", 10), 0);
}
END_TEST

/* ---- downloads ---------------------------------------------------------- */

START_TEST(test_download_and_cache)
{
	struct dt_fetch_opts o;
	char cache[PATH_MAX], u[PATH_MAX], out[PATH_MAX], where[PATH_MAX];
	struct dt_fetch_source src = { .sha256 = data_sha, .size = DATA_LEN };
	struct dt_error err;
	int cached = -1, before;

	test_opts(&o, cache, "plain");
	url(u, "/data.bin?id=plain");
	src.url = u;
	ck_assert_int_eq(dt_fetch_is_cached(&src, &o, where, sizeof where,
					    &cached, &err), DT_OK);
	ck_assert_int_eq(cached, 0);
	ck_assert_int_eq(dt_fetch(&src, &o, out, sizeof out, &err), DT_OK);
	ck_assert_str_eq(out, where);
	ck_assert_str_eq(out + strlen(out) - 9, "-data.bin");
	assert_sha(out, data_sha);
	ck_assert_int_eq(cache_count(cache, ".part"), 0);
	ck_assert_int_eq(dt_fetch_is_cached(&src, &o, where, sizeof where,
					    &cached, &err), DT_OK);
	ck_assert_int_eq(cached, 1);

	/* Served from the cache: the server sees nothing more. */
	before = log_count("id=plain");
	ck_assert_int_eq(before, 1);
	ck_assert_int_eq(dt_fetch(&src, &o, out, sizeof out, &err), DT_OK);
	ck_assert_int_eq(log_count("id=plain"), 1);

	/* Damaged in the cache: caught by the sha256, fetched again. */
	{
		int fd = open(out, O_WRONLY);

		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(pwrite(fd, "X", 1, 100), 1);
		close(fd);
	}
	ck_assert_int_eq(dt_fetch(&src, &o, out, sizeof out, &err), DT_OK);
	ck_assert_int_eq(log_count("id=plain"), 2);
	assert_sha(out, data_sha);

	/* Without a sha256 or size the cache is trusted as it is. */
	src.sha256 = "";	/* as job.h leaves it when not given */
	src.size = 0;
	ck_assert_int_eq(dt_fetch(&src, &o, out, sizeof out, &err), DT_OK);
	ck_assert_int_eq(log_count("id=plain"), 2);
}
END_TEST

START_TEST(test_not_found)
{
	struct dt_fetch_opts o;
	char cache[PATH_MAX], u[PATH_MAX], out[PATH_MAX] = "untouched";
	char want[PATH_MAX + 80];
	struct dt_fetch_source src = { 0 };
	struct dt_error err;

	test_opts(&o, cache, "404");
	url(u, "/fault/404/data.bin");
	src.url = u;
	ck_assert_int_eq(dt_fetch(&src, &o, out, sizeof out, &err),
			 DT_ERR_NET);
	snprintf(want, sizeof want, "%s: HTTP 404 Not Found (the server "
		 "refused the request; check the URL)", u);
	ck_assert_str_eq(err.msg, want);
	ck_assert_str_eq(out, "untouched");
	/* One request: a 4xx is not retried, and its page is not data. */
	ck_assert_int_eq(log_count("/fault/404/data.bin"), 1);
	ck_assert_int_eq(cache_count(cache, ""), 0);
	ck_assert_int_eq(cache_count(cache, ".part"), 0);

	url(u, "/no-such-file");
	ck_assert_int_eq(dt_fetch(&src, &o, out, sizeof out, &err),
			 DT_ERR_NET);
	assert_msg_has(&err, "no-such-file: HTTP 404 Not Found");
	ck_assert_int_eq(cache_count(cache, ""), 0);
	ck_assert_int_eq(cache_count(cache, ".part"), 0);
}
END_TEST

/* dt_fetch_head: a shard's first bytes and its size, one ranged request
 * each, nothing cached; a server that ignores Range is cut off; a 404 is
 * not retried, a 500 is. */
START_TEST(test_head)
{
	struct dt_fetch_opts o;
	char cache[PATH_MAX], u[PATH_MAX];
	unsigned char buf[16], *data = make_data();
	size_t got = 0;
	int64_t total = 0;
	struct dt_error err;

	test_opts(&o, cache, "head");
	url(u, "/data.bin?id=head1");
	ck_assert_int_eq(dt_fetch_head(u, &o, buf, sizeof buf, &got, &total,
				       &err), DT_OK);
	ck_assert_uint_eq(got, 16);
	ck_assert_int_eq(total, DATA_LEN);
	ck_assert_mem_eq(buf, data, 16);
	ck_assert_int_eq(log_count("id=head1 range=bytes=0-15 status=206"),
			 1);
	ck_assert_int_eq(log_count("id=head1"), 1);
	ck_assert_int_eq(cache_count(cache, ""), 0);

	memset(buf, 0, sizeof buf);
	url(u, "/fault/norange/data.bin");
	ck_assert_int_eq(dt_fetch_head(u, &o, buf, sizeof buf, &got, &total,
				       &err), DT_OK);
	ck_assert_uint_eq(got, 16);
	ck_assert_int_eq(total, DATA_LEN);
	ck_assert_mem_eq(buf, data, 16);

	url(u, "/fault/404/data.bin?id=head2");
	ck_assert_int_eq(dt_fetch_head(u, &o, buf, sizeof buf, &got, &total,
				       &err), DT_ERR_NET);
	assert_msg_has(&err, "id=head2: HTTP 404");
	ck_assert_int_eq(log_count("id=head2"), 1);

	url(u, "/data.bin?fault=500&n=2&id=head3");
	ck_assert_int_eq(dt_fetch_head(u, &o, buf, sizeof buf, &got, &total,
				       &err), DT_OK);
	ck_assert_int_eq(total, DATA_LEN);
	ck_assert_int_eq(log_count("id=head3 range=bytes=0-15 status=500"),
			 2);
	ck_assert_int_eq(log_count("id=head3 range=bytes=0-15 status=206"),
			 1);

	url(u, "/data.bin?fault=500&n=9&id=head4");
	ck_assert_int_eq(dt_fetch_head(u, &o, buf, sizeof buf, &got, &total,
				       &err), DT_ERR_NET);
	assert_msg_has(&err, "id=head4: gave up after 3 attempts: HTTP 500");
	ck_assert_int_eq(log_count("id=head4"), 3);
	free(data);
}
END_TEST

START_TEST(test_server_errors_retried)
{
	struct dt_fetch_opts o;
	char cache[PATH_MAX], u[PATH_MAX], out[PATH_MAX];
	struct dt_fetch_source src = { .sha256 = data_sha };
	struct dt_error err;

	test_opts(&o, cache, "500");
	url(u, "/data.bin?fault=500&n=2&id=a");
	src.url = u;
	ck_assert_int_eq(dt_fetch(&src, &o, out, sizeof out, &err), DT_OK);
	assert_sha(out, data_sha);
	ck_assert_int_eq(log_count("id=a range=- status=500"), 2);
	ck_assert_int_eq(log_count("id=a range=- status=200"), 1);

	url(u, "/data.bin?fault=500&n=9&id=b");
	ck_assert_int_eq(dt_fetch(&src, &o, out, sizeof out, &err),
			 DT_ERR_NET);
	ck_assert_str_eq(strstr(err.msg, "id=b: "), "id=b: gave up after 3 "
			 "attempts; the last failed with: HTTP 500 Internal "
			 "Server Error");
	ck_assert_int_eq(log_count("id=b"), 3);
	ck_assert_int_eq(cache_count(cache, ""), 1);	/* the first one */
}
END_TEST

START_TEST(test_dropped_connection_resumes)
{
	struct dt_fetch_opts o;
	char cache[PATH_MAX], u[PATH_MAX], out[PATH_MAX];
	struct dt_fetch_source src = { .sha256 = data_sha, .size = DATA_LEN };
	struct dt_error err;

	test_opts(&o, cache, "drop");
	url(u, "/data.bin?fault=drop&id=drop");
	src.url = u;
	ck_assert_int_eq(dt_fetch(&src, &o, out, sizeof out, &err), DT_OK);
	assert_sha(out, data_sha);
	ck_assert_int_eq(log_count("id=drop range=- status=200"), 1);
	ck_assert_int_eq(log_count("id=drop range=bytes=150000- status=206"),
			 1);

	/* With no retries the half stays in .part, never at the final
	 * name, and the next fetch finishes it. */
	o.retries = 0;
	url(u, "/data.bin?fault=drop&id=drop2");
	ck_assert_int_eq(dt_fetch(&src, &o, out, sizeof out, &err),
			 DT_ERR_NET);
	assert_msg_has(&err, "gave up after 1 attempt; the last failed with: "
		       "transfer closed with 150000 bytes remaining");
	ck_assert_int_eq(cache_count(cache, ""), 1);
	ck_assert_int_eq(cache_count(cache, ".part"), 1);
	ck_assert_int_eq(dt_fetch(&src, &o, out, sizeof out, &err), DT_OK);
	assert_sha(out, data_sha);
	ck_assert_int_eq(log_count("id=drop2 range=bytes=150000- status=206"),
			 1);
	ck_assert_int_eq(cache_count(cache, ".part"), 0);
}
END_TEST

/* One header line at a time, as libcurl hands them over (with CR LF,
 * not NUL-terminated): what each line sets, and what a status line
 * resets. */
static void
header(struct dt_fetch_header *h, const char *line)
{
	char buf[512];
	size_t n = strlen(line);

	/* No terminator after the line: the parser must not look for one. */
	memcpy(buf, line, n);
	memset(buf + n, 'x', sizeof buf - n);
	dt_fetch_parse_header_line(h, buf, n);
}

START_TEST(test_header_lines)
{
	struct dt_fetch_header h;
	char longline[400];

	memset(&h, 0, sizeof h);
	header(&h, "Transfer-Encoding: gzip, Chunked\r\n");
	ck_assert_int_eq(h.chunked, 1);
	header(&h, "HTTP/1.1 206 Partial Content\r\n");
	ck_assert_int_eq(h.chunked, 0);
	ck_assert_int_eq(h.status, 206);
	ck_assert_str_eq(h.reason, "Partial Content");
	ck_assert_int_eq(h.content_length, -1);
	ck_assert_int_eq(h.range_start, -1);
	ck_assert_int_eq(h.range_total, -1);
	ck_assert_int_eq(h.retry_after_s, -1);
	header(&h, "content-length:  100\r\n");
	ck_assert_int_eq(h.content_length, 100);
	header(&h, "Content-Range: bytes 100-199/200\r\n");
	ck_assert_int_eq(h.range_start, 100);
	ck_assert_int_eq(h.range_total, 200);
	header(&h, "ETag: \"v1\"\r\n");
	ck_assert_str_eq(h.etag, "\"v1\"");
	header(&h, "ETag: W/\"weak\"\r\n");	/* kept: the strong one */
	ck_assert_str_eq(h.etag, "\"v1\"");
	header(&h, "Last-Modified:\tTue, 01 Dec 2026 10:00:00 GMT\r\n");
	ck_assert_str_eq(h.last_modified, "Tue, 01 Dec 2026 10:00:00 GMT");
	header(&h, "X-Other: 5\r\n");
	ck_assert_int_eq(h.content_length, 100);

	/* A redirect's or an earlier answer's fields do not survive the
	 * next status line. */
	header(&h, "HTTP/2 503\r\n");
	ck_assert_int_eq(h.status, 503);
	ck_assert_str_eq(h.reason, "");
	ck_assert_int_eq(h.content_length, -1);
	ck_assert_int_eq(h.range_start, -1);
	ck_assert_str_eq(h.etag, "");
	ck_assert_str_eq(h.last_modified, "");

	/* Numbers past INT64_MAX - 8, or none, read as -1; a
	 * Retry-After is bounded to a day (86400 s). */
	header(&h, "Retry-After: 120\r\n");
	ck_assert_int_eq(h.retry_after_s, 120);
	header(&h, "Retry-After: 99999999999\r\n");
	ck_assert_int_eq(h.retry_after_s, 86400);
	header(&h, "Retry-After: Wed, 21 Oct 2026 07:28:00 GMT\r\n");
	ck_assert_int_eq(h.retry_after_s, -1);
	header(&h, "Content-Length: 9223372036854775799\r\n");
	ck_assert_int_eq(h.content_length, INT64_MAX - 8);
	header(&h, "Content-Length: 9223372036854775800\r\n");
	ck_assert_int_eq(h.content_length, -1);
	header(&h, "Content-Range: bytes */200\r\n");
	ck_assert_int_eq(h.range_start, -1);
	ck_assert_int_eq(h.range_total, 200);
	header(&h, "HTTP/1.1 abc\r\n");
	ck_assert_int_eq(h.status, -1);

	/* Only the first 255 bytes of a line count: an ETag that does not
	 * fit is dropped rather than cut. */
	memset(&h, 0, sizeof h);
	memset(longline, 'a', sizeof longline);
	memcpy(longline, "ETag: \"", 7);
	longline[sizeof longline - 1] = '\0';
	header(&h, longline);
	ck_assert_str_eq(h.etag, "");
	memcpy(longline, "HTTP/1.1 200 ", 13);
	header(&h, longline);
	ck_assert_int_eq(h.status, 200);
	ck_assert_uint_eq(strlen(h.reason), sizeof h.reason - 1);
}
END_TEST

/* dt_data_sniff on files made here: each kind's first bytes, gzip
 * wrapped or not, and the pages and bytes each kind must refuse. */
START_TEST(test_sniff_kinds)
{
	static const unsigned char idx[] = { 0, 0, 0x08, 3, 0, 0, 0, 1 };
	static const unsigned char npy[] = "\x93NUMPY\x01\x00";
	static const char page[] = "\n  <!DOCTYPE html><html><body>Sign in"
				   "</body></html>\n";
	static const char csv[] = "label,x0,x1\n3,0.5,0.25\n";
	static const unsigned char nul[] = { 'a', ',', 0, 'b', '\n' };
	static const unsigned char bad_gz[] = { 0x1f, 0x8b, 0, 0, 0x70, 0x60,
						0, 0 };
	char path[PATH_MAX], gz[PATH_MAX + 8], cmd[3 * PATH_MAX];
	struct dt_error err;

	snprintf(path, sizeof path, "%s/sniff", tmpdir);
	write_bytes(path, idx, sizeof idx);
	ck_assert_int_eq(dt_data_sniff(path, DT_DATA_IDX, "u", &err), DT_OK);
	ck_assert_int_eq(dt_data_sniff(path, DT_DATA_NPY, "u", &err),
			 DT_ERR_DATA);
	assert_msg_has(&err, "u: the download is not an NPY file: it starts "
		       "with \"\\x00\\x00\\x08\\x03");
	snprintf(gz, sizeof gz, "%s.gz", path);
	snprintf(cmd, sizeof cmd, "gzip -c '%s' > '%s'", path, gz);
	ck_assert_int_eq(system(cmd), 0);
	ck_assert_int_eq(dt_data_sniff(gz, DT_DATA_IDX, "u", &err), DT_OK);

	write_bytes(path, npy, sizeof npy - 1);
	ck_assert_int_eq(dt_data_sniff(path, DT_DATA_NPY, "u", &err), DT_OK);
	ck_assert_int_eq(dt_data_sniff(path, DT_DATA_IDX, "u", &err),
			 DT_ERR_DATA);
	assert_msg_has(&err, "no IDX magic");

	write_bytes(path, page, strlen(page));
	for (int k = DT_DATA_IDX; k <= DT_DATA_BINARY; k++) {
		ck_assert_int_eq(dt_data_sniff(path, (enum dt_data_kind)k, "u",
					       &err), DT_ERR_DATA);
		assert_msg_has(&err, "an HTML or XML page, not the data");
	}
	ck_assert_int_eq(dt_data_sniff(path, DT_DATA_ANY, "u", &err), DT_OK);
	snprintf(cmd, sizeof cmd, "gzip -c '%s' > '%s'", path, gz);
	ck_assert_int_eq(system(cmd), 0);
	ck_assert_int_eq(dt_data_sniff(gz, DT_DATA_TEXT, "u", &err),
			 DT_ERR_DATA);

	write_bytes(path, csv, strlen(csv));
	ck_assert_int_eq(dt_data_sniff(path, DT_DATA_TEXT, "u", &err), DT_OK);
	ck_assert_int_eq(dt_data_sniff(path, DT_DATA_BINARY, "u", &err), DT_OK);
	write_bytes(path, nul, sizeof nul);
	ck_assert_int_eq(dt_data_sniff(path, DT_DATA_TEXT, "u", &err),
			 DT_ERR_DATA);
	assert_msg_has(&err, "a NUL byte");
	ck_assert_int_eq(dt_data_sniff(path, DT_DATA_BINARY, "u", &err), DT_OK);

	/* The gzip magic with a bad method byte: zlib's message was read
	 * after gzclose freed it (fuzz_sniff; AddressSanitizer's
	 * heap-use-after-free). tests/fuzz/regress/sniff/ has the input. */
	write_bytes(path, bad_gz, sizeof bad_gz);
	for (int k = DT_DATA_IDX; k <= DT_DATA_BINARY; k++) {
		ck_assert_int_eq(dt_data_sniff(path, (enum dt_data_kind)k, "u",
					       &err), DT_ERR_DATA);
		assert_msg_has(&err, "it is not valid gzip (");
		assert_msg_has(&err, "sniff: unknown compression method)");
	}
}
END_TEST

/* A 200 whose body is an HTML page, for a source with no digest: refused
 * before the rename, nothing cached, and the real file fetched later. */
START_TEST(test_html_page_not_cached)
{
	struct dt_fetch_opts o;
	char cache[PATH_MAX], u[PATH_MAX], out[PATH_MAX];
	struct dt_fetch_source src = { .expect = DT_DATA_TEXT };
	struct dt_error err;

	test_opts(&o, cache, "html");
	url(u, "/fault/html200/data.bin");
	src.url = u;
	ck_assert_int_eq(dt_fetch(&src, &o, out, sizeof out, &err),
			 DT_ERR_DATA);
	assert_msg_has(&err, "html200/data.bin: the download is not text: "
		       "it starts with \"<!DOCTYPE html>");
	assert_msg_has(&err, "(the download has been deleted)");
	ck_assert_int_eq(cache_count(cache, ""), 0);
	ck_assert_int_eq(cache_count(cache, ".part"), 0);
	ck_assert_int_eq(cache_count(cache, ".meta"), 0);
}
END_TEST

/* The digest cache: a second call reads the entry (shown by planting
 * another digest in it), refresh hashes again, and a write to the file
 * (a new ctime) is never answered from the old entry. */
START_TEST(test_digest_cache)
{
	struct dt_fetch_opts o;
	char cache[PATH_MAX], path[PATH_MAX], dir[PATH_MAX + 8];
	char entry[PATH_MAX + 300], hex[65], text[1024];
	const char *abc = "ba7816bf8f01cfea414140de5dae2223"
			  "b00361a396177a9cb410ff61f20015ad";
	const char *zeros = "00000000000000000000000000000000"
			    "00000000000000000000000000000000";
	struct dt_error err;
	struct dirent *e;
	char *at;
	DIR *d;
	FILE *f;
	size_t n;

	test_opts(&o, cache, "digest");
	snprintf(path, sizeof path, "%s/abc.txt", tmpdir);
	write_bytes(path, "abc", 3);
	ck_assert_int_eq(dt_fetch_digest(path, &o, hex, &err), DT_OK);
	ck_assert_str_eq(hex, abc);

	/* One entry, naming the file and holding its digest. */
	snprintf(dir, sizeof dir, "%s/sha256", cache);
	d = opendir(dir);
	ck_assert_ptr_nonnull(d);
	entry[0] = '\0';
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.') {
			ck_assert_str_eq(entry, "");
			snprintf(entry, sizeof entry, "%s/%s", dir, e->d_name);
		}
	closedir(d);
	ck_assert_str_ne(entry, "");
	f = fopen(entry, "rb");
	ck_assert_ptr_nonnull(f);
	n = fread(text, 1, sizeof text - 1, f);
	fclose(f);
	text[n] = '\0';
	ck_assert_ptr_nonnull(strstr(text, "/abc.txt\t"));
	at = strstr(text, abc);
	ck_assert_ptr_nonnull(at);

	/* Planted: the cache answers, without reading the file. */
	memcpy(at, zeros, 64);
	write_bytes(entry, text, n);
	ck_assert_int_eq(dt_fetch_digest(path, &o, hex, &err), DT_OK);
	ck_assert_str_eq(hex, zeros);
	o.refresh = 1;
	ck_assert_int_eq(dt_fetch_digest(path, &o, hex, &err), DT_OK);
	ck_assert_str_eq(hex, abc);
	o.refresh = 0;
	ck_assert_int_eq(dt_fetch_digest(path, &o, hex, &err), DT_OK);
	ck_assert_str_eq(hex, abc);

	/* Other bytes of the same size: another version, hashed anew. */
	write_bytes(path, "abd", 3);
	ck_assert_int_eq(dt_fetch_digest(path, &o, hex, &err), DT_OK);
	ck_assert_str_eq(hex, "a52d159f262b2c6ddb724a61840befc3"
			 "6eb30c88877a4030b65cbe86298449c9");

	snprintf(path, sizeof path, "%s/missing", tmpdir);
	strcpy(hex, "untouched");
	ck_assert_int_eq(dt_fetch_digest(path, &o, hex, &err), DT_ERR_IO);
	assert_msg_has(&err, "missing: cannot stat: No such file");
	ck_assert_str_eq(hex, "untouched");
}
END_TEST

/* IDX and NPY files must hold what their headers promise. */
START_TEST(test_check_whole)
{
	/* u8, 1 dimension of 4: 8 header bytes and 4 of data. */
	static const unsigned char idx[] = { 0, 0, 8, 1, 0, 0, 0, 4,
					     1, 2, 3, 4, 5 };
	static const char npy[] = "\x93NUMPY\x01\x00\x40\x00{'descr': '|u1', "
		"'fortran_order': False, 'shape': (3,), }      \n" "abc";
	char path[PATH_MAX];
	struct dt_error err;

	snprintf(path, sizeof path, "%s/x.idx", tmpdir);
	write_bytes(path, idx, 12);
	ck_assert_int_eq(dt_data_check_whole(path, DT_DATA_IDX, "URL", &err),
			 DT_OK);
	write_bytes(path, idx, 11);
	ck_assert_int_eq(dt_data_check_whole(path, DT_DATA_IDX, "URL", &err),
			 DT_ERR_DATA);
	assert_msg_has(&err, "URL: the download is not a whole IDX file: ");
	assert_msg_has(&err, "truncated: expected 4 bytes of data, found 3");
	write_bytes(path, idx, 13);
	ck_assert_int_eq(dt_data_check_whole(path, DT_DATA_IDX, "URL", &err),
			 DT_ERR_DATA);
	assert_msg_has(&err, "trailing data");
	/* Kinds without a length pass whatever their length. */
	ck_assert_int_eq(dt_data_check_whole(path, DT_DATA_BINARY, "URL",
					     &err), DT_OK);

	snprintf(path, sizeof path, "%s/x.npy", tmpdir);
	ck_assert_int_eq((int)sizeof npy - 1, 10 + 0x40 + 3);
	write_bytes(path, npy, sizeof npy - 1);
	ck_assert_int_eq(dt_data_check_whole(path, DT_DATA_NPY, "URL", &err),
			 DT_OK);
	write_bytes(path, npy, sizeof npy - 2);
	ck_assert_int_eq(dt_data_check_whole(path, DT_DATA_NPY, "URL", &err),
			 DT_ERR_DATA);
	assert_msg_has(&err, "URL: the download is not a whole NPY file: ");
	assert_msg_has(&err, "truncated");
}
END_TEST

/* A body whose end is not marked (no Content-Length, not chunked) is a
 * failed transfer unless a digest, a size or the format can show it
 * whole; refresh downloads a cached file again. */
START_TEST(test_unmarked_end)
{
	struct dt_fetch_opts o;
	char cache[PATH_MAX], u[PATH_MAX], out[PATH_MAX];
	struct dt_fetch_source src = { .expect = DT_DATA_BINARY };
	struct dt_error err;

	test_opts(&o, cache, "unmarked");
	url(u, "/fault/nolen/data.bin");
	src.url = u;
	ck_assert_int_eq(dt_fetch(&src, &o, out, sizeof out, &err),
			 DT_ERR_NET);
	assert_msg_has(&err, "nolen/data.bin: the server sent neither a "
		       "Content-Length nor a chunked body");
	ck_assert_int_eq(cache_count(cache, ""), 0);
	ck_assert_int_eq(cache_count(cache, ".part"), 0);
	src.size = DATA_LEN;
	ck_assert_int_eq(dt_fetch(&src, &o, out, sizeof out, &err), DT_OK);
	assert_sha(out, data_sha);
	/* Damaged at its final name and refreshed: whole again. */
	write_bytes(out, "x", 1);
	src.size = 0;
	o.refresh = 1;
	src.sha256 = data_sha;
	ck_assert_int_eq(dt_fetch(&src, &o, out, sizeof out, &err), DT_OK);
	assert_sha(out, data_sha);
}
END_TEST

START_TEST(test_resume_from_part)
{
	struct dt_fetch_opts o;
	char cache[PATH_MAX], u[PATH_MAX], out[PATH_MAX], fin[PATH_MAX];
	struct dt_fetch_source src = { .sha256 = data_sha };
	struct dt_error err;
	unsigned char *data = make_data();

	test_opts(&o, cache, "part");
	ck_assert_int_eq(mkdir(cache, 0777), 0);

	/* A plain resume. */
	url(u, "/data.bin?id=resume");
	src.url = u;
	cache_file(u, &o, fin);
	write_part(fin, data, 1000);
	ck_assert_int_eq(dt_fetch(&src, &o, out, sizeof out, &err), DT_OK);
	assert_sha(out, data_sha);
	ck_assert_int_eq(log_count("id=resume range=bytes=1000- status=206"),
			 1);
	ck_assert_int_eq(log_count("id=resume"), 1);

	/* Bytes with no record of where they came from (left by another
	 * program, or by a version that kept none): never resumed onto. */
	url(u, "/data.bin?id=norecord");
	cache_file(u, &o, fin);
	write_part_raw(fin, data, 1000);
	ck_assert_int_eq(dt_fetch(&src, &o, out, sizeof out, &err), DT_OK);
	assert_sha(out, data_sha);
	ck_assert_int_eq(log_count("id=norecord range=- status=200"), 1);
	ck_assert_int_eq(log_count("id=norecord"), 1);

	/* The validator of the same version: If-Range holds, 206. */
	{
		char tag[40];

		snprintf(tag, sizeof tag, "\"%.32s\"", data_sha);
		url(u, "/data.bin?id=sametag");
		cache_file(u, &o, fin);
		write_part_as(fin, data, 1000, tag);
		ck_assert_int_eq(dt_fetch(&src, &o, out, sizeof out, &err),
				 DT_OK);
		assert_sha(out, data_sha);
		ck_assert_int_eq(log_count("id=sametag range=bytes=1000- "
					   "status=206"), 1);
	}

	/* Bytes of another version of the file (its validator differs):
	 * the server sends the whole file, which replaces them, and no
	 * sha256 is needed to notice. */
	{
		struct dt_fetch_source nodigest = { .url = u };
		unsigned char *other = make_data();

		other[5] ^= 1;
		url(u, "/data.bin?id=othertag");
		cache_file(u, &o, fin);
		write_part_as(fin, other, 1000, "\"0123456789abcdef\"");
		ck_assert_int_eq(dt_fetch(&nodigest, &o, out, sizeof out, &err),
				 DT_OK);
		assert_sha(out, data_sha);
		ck_assert_int_eq(log_count("id=othertag range=bytes=1000- "
					   "status=200"), 1);
		ck_assert_int_eq(cache_count(cache, ".part"), 0);
		ck_assert_int_eq(cache_count(cache, ".meta"), 0);
		free(other);
	}

	/* A server that ignores Range: read again from byte 0. */
	url(u, "/fault/norange/data.bin");
	cache_file(u, &o, fin);
	write_part(fin, data, 1000);
	ck_assert_int_eq(dt_fetch(&src, &o, out, sizeof out, &err), DT_OK);
	assert_sha(out, data_sha);
	ck_assert_int_eq(log_count("norange/data.bin range=bytes=1000- "
				   "status=200"), 1);

	/* A 206 from the wrong byte: start over without a Range. */
	url(u, "/fault/badrange/data.bin");
	cache_file(u, &o, fin);
	write_part(fin, data, 1000);
	ck_assert_int_eq(dt_fetch(&src, &o, out, sizeof out, &err), DT_OK);
	assert_sha(out, data_sha);
	ck_assert_int_eq(log_count("badrange/data.bin range=- status=200"), 1);

	/* A .part that is already whole (size unknown): the server answers
	 * 416 with the total, and nothing more is fetched. */
	url(u, "/data.bin?id=whole");
	cache_file(u, &o, fin);
	write_part(fin, data, DATA_LEN);
	ck_assert_int_eq(dt_fetch(&src, &o, out, sizeof out, &err), DT_OK);
	assert_sha(out, data_sha);
	ck_assert_int_eq(log_count("id=whole range=bytes=300000- status=416"),
			 1);

	/* A .part longer than the file: 416, then from byte 0. */
	url(u, "/data.bin?id=long");
	cache_file(u, &o, fin);
	{
		unsigned char *more = dt_xcalloc(DATA_LEN + 10, 1);

		write_part(fin, more, DATA_LEN + 10);
		free(more);
	}
	ck_assert_int_eq(dt_fetch(&src, &o, out, sizeof out, &err), DT_OK);
	assert_sha(out, data_sha);

	/* A stale .part (other bytes): the sha256 catches it, and neither
	 * the .part nor a final file is left. */
	url(u, "/data.bin?id=stale");
	cache_file(u, &o, fin);
	data[5] ^= 1;
	write_part(fin, data, 1000);
	ck_assert_int_eq(dt_fetch(&src, &o, out, sizeof out, &err),
			 DT_ERR_DATA);
	assert_msg_has(&err, "id=stale: sha256 mismatch: expected ");
	assert_msg_has(&err, "(the download has been deleted)");
	ck_assert_int_eq(access(fin, F_OK), -1);
	ck_assert_int_eq(cache_count(cache, ".part"), 0);
	free(data);
}
END_TEST

START_TEST(test_wrong_content)
{
	struct dt_fetch_opts o;
	char cache[PATH_MAX], u[PATH_MAX], out[PATH_MAX], path[PATH_MAX];
	char bad_sha[65], want[PATH_MAX + 200];
	struct dt_fetch_source src = { .sha256 = data_sha };
	struct dt_error err;
	unsigned char *data = make_data();

	for (size_t i = 0; i < DATA_LEN; i++)
		data[i] ^= 0x5A;
	snprintf(path, sizeof path, "%s/wrong.bin", tmpdir);
	write_bytes(path, data, DATA_LEN);
	free(data);
	ck_assert_int_eq(dt_sha256_file(path, bad_sha, &err), DT_OK);

	test_opts(&o, cache, "wrong");
	url(u, "/fault/wrong/data.bin");
	src.url = u;
	ck_assert_int_eq(dt_fetch(&src, &o, out, sizeof out, &err),
			 DT_ERR_DATA);
	snprintf(want, sizeof want, "%s: sha256 mismatch: expected %s, got %s "
		 "(the download has been deleted)", u, data_sha, bad_sha);
	ck_assert_str_eq(err.msg, want);
	ck_assert_int_eq(cache_count(cache, ""), 0);
	ck_assert_int_eq(cache_count(cache, ".part"), 0);

	/* Upper-case hex is the same digest. */
	for (char *p = bad_sha; *p; p++)
		if (*p >= 'a' && *p <= 'f')
			*p = (char)(*p - 'a' + 'A');
	src.sha256 = bad_sha;
	ck_assert_int_eq(dt_fetch(&src, &o, out, sizeof out, &err), DT_OK);
}
END_TEST

START_TEST(test_size_limits)
{
	struct dt_fetch_opts o;
	char cache[PATH_MAX], u[PATH_MAX], out[PATH_MAX], want[PATH_MAX + 200];
	struct dt_fetch_source src = { 0 };
	struct dt_error err;

	test_opts(&o, cache, "size");
	url(u, "/data.bin?id=size1");
	src.url = u;

	/* Shorter than the job says. */
	src.size = DATA_LEN + 1;
	ck_assert_int_eq(dt_fetch(&src, &o, out, sizeof out, &err),
			 DT_ERR_DATA);
	snprintf(want, sizeof want, "%s: size mismatch: expected 300001 bytes, "
		 "got 300000 (the download has been deleted)", u);
	ck_assert_str_eq(err.msg, want);

	/* Longer: refused from the Content-Length, before the body. */
	src.size = DATA_LEN - 1;
	ck_assert_int_eq(dt_fetch(&src, &o, out, sizeof out, &err),
			 DT_ERR_NET);
	snprintf(want, sizeof want, "%s: the server announces 300000 bytes, "
		 "more than the expected size of 299999 bytes", u);
	ck_assert_str_eq(err.msg, want);

	/* max_bytes, announced and not. */
	src.size = 0;
	o.max_bytes = 1000;
	ck_assert_int_eq(dt_fetch(&src, &o, out, sizeof out, &err),
			 DT_ERR_NET);
	assert_msg_has(&err, "announces 300000 bytes, more than the limit "
		       "(max_bytes) of 1000 bytes");
	url(u, "/fault/nolen/data.bin");
	ck_assert_int_eq(dt_fetch(&src, &o, out, sizeof out, &err),
			 DT_ERR_NET);
	snprintf(want, sizeof want, "%s: the body runs past the limit "
		 "(max_bytes) of 1000 bytes; download stopped", u);
	ck_assert_str_eq(err.msg, want);
	ck_assert_int_eq(cache_count(cache, ""), 0);
	ck_assert_int_eq(cache_count(cache, ".part"), 0);

	/* Without the bound, a body without a length is fine. */
	o.max_bytes = 0;
	src.sha256 = data_sha;
	ck_assert_int_eq(dt_fetch(&src, &o, out, sizeof out, &err), DT_OK);
	assert_sha(out, data_sha);
}
END_TEST

START_TEST(test_redirects)
{
	struct dt_fetch_opts o;
	char cache[PATH_MAX], u[PATH_MAX], out[PATH_MAX], want[PATH_MAX + 80];
	struct dt_fetch_source src = { .sha256 = data_sha };
	struct dt_error err;

	test_opts(&o, cache, "redirect");
	url(u, "/fault/redirect/data.bin");
	src.url = u;
	ck_assert_int_eq(dt_fetch(&src, &o, out, sizeof out, &err), DT_OK);
	assert_sha(out, data_sha);
	ck_assert_int_eq(log_count("/fault/redirect/data.bin range=- "
				   "status=302"), 1);

	o.max_redirects = 5;
	url(u, "/fault/loop/data.bin");
	ck_assert_int_eq(dt_fetch(&src, &o, out, sizeof out, &err),
			 DT_ERR_NET);
	snprintf(want, sizeof want, "%s: more than 5 redirects (a redirect "
		 "loop?)", u);
	ck_assert_str_eq(err.msg, want);
	ck_assert_int_eq(log_count("/fault/loop/data.bin"), 6);
	ck_assert_int_eq(cache_count(cache, ""), 1);
	ck_assert_int_eq(cache_count(cache, ".part"), 0);
}
END_TEST

START_TEST(test_stalled_body)
{
	struct dt_fetch_opts o;
	char cache[PATH_MAX], u[PATH_MAX], out[PATH_MAX];
	struct dt_fetch_source src = { .sha256 = data_sha };
	struct dt_error err;

	test_opts(&o, cache, "slow");
	o.retries = 0;
	url(u, "/data.bin?fault=slow&secs=4&id=s1");
	src.url = u;
	ck_assert_int_eq(dt_fetch(&src, &o, out, sizeof out, &err),
			 DT_ERR_NET);
	assert_msg_has(&err, "id=s1: gave up after 1 attempt; the last "
		       "failed with: Operation too slow");
	assert_msg_has(&err, "75000 bytes kept in ");
	ck_assert_int_eq(cache_count(cache, ""), 0);
	ck_assert_int_eq(cache_count(cache, ".part"), 1);

	/* Stalled once, then resumed after the timeout. */
	o.retries = 1;
	url(u, "/data.bin?fault=slow&n=1&secs=4&id=s2");
	ck_assert_int_eq(dt_fetch(&src, &o, out, sizeof out, &err), DT_OK);
	assert_sha(out, data_sha);
	ck_assert_int_eq(log_count("id=s2 range=bytes=75000- status=206"), 1);
}
END_TEST

START_TEST(test_connection_refused)
{
	struct dt_fetch_opts o;
	char cache[PATH_MAX], u[PATH_MAX], out[PATH_MAX];
	struct dt_fetch_source src = { 0 };
	struct dt_error err;
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof sa;
	int s = socket(AF_INET, SOCK_STREAM, 0);

	/* A port that was free a moment ago and has nobody listening. */
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(s, (struct sockaddr *)&sa, sizeof sa), 0);
	ck_assert_int_eq(getsockname(s, (struct sockaddr *)&sa, &len), 0);
	close(s);
	snprintf(u, sizeof u, "http://127.0.0.1:%d/data.bin",
		 ntohs(sa.sin_port));
	test_opts(&o, cache, "refused");
	o.retries = 1;
	src.url = u;
	ck_assert_int_eq(dt_fetch(&src, &o, out, sizeof out, &err),
			 DT_ERR_NET);
	assert_msg_has(&err, "gave up after 2 attempts; the last failed with: "
		       "Failed to connect");
	ck_assert_int_eq(cache_count(cache, ""), 0);
}
END_TEST

START_TEST(test_progress_bar)
{
	struct dt_fetch_opts o;
	char cache[PATH_MAX], u[PATH_MAX], out[PATH_MAX], path[PATH_MAX];
	char text[4096];
	struct dt_fetch_source src = { .sha256 = data_sha };
	struct dt_error err;
	FILE *f;
	size_t n;
	int fd, saved;

	snprintf(path, sizeof path, "%s/stderr.txt", tmpdir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0666);
	ck_assert_int_ge(fd, 0);
	fflush(stderr);
	saved = dup(STDERR_FILENO);
	dup2(fd, STDERR_FILENO);
	close(fd);

	test_opts(&o, cache, "progress");
	o.progress = 1;
	url(u, "/data.bin?fault=500&n=1&id=progress");
	src.url = u;
	ck_assert_int_eq(dt_fetch(&src, &o, out, sizeof out, &err), DT_OK);
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	n = fread(text, 1, sizeof text - 1, f);
	fclose(f);
	text[n] = '\0';
	ck_assert_msg(strstr(text, "data.bin") != NULL, "%s", text);
	ck_assert_msg(strstr(text, "293.0 KiB / 293.0 KiB  100%") != NULL,
		      "%s", text);
	/* The ETA in the format of the training progress line. */
	ck_assert_msg(strstr(text, "  ETA 0m00s") != NULL, "%s", text);
	ck_assert_msg(strstr(text, "ETA 0:") == NULL, "%s", text);
	ck_assert_msg(strstr(text, "HTTP 500 Internal Server Error; "
			     "retrying in 0.0 s (1 of 2)") != NULL, "%s",
		      text);
	ck_assert_int_eq(text[n - 1], '\n');
}
END_TEST

START_TEST(test_interrupt)
{
	struct dt_fetch_opts o;
	char cache[PATH_MAX], u[PATH_MAX], out[PATH_MAX];
	struct dt_fetch_source src = { 0 };
	struct dt_error err;
	volatile sig_atomic_t stop = 1;

	test_opts(&o, cache, "interrupt");
	o.interrupt = &stop;
	url(u, "/data.bin?fault=slow&secs=2&id=int");
	src.url = u;
	ck_assert_int_eq(dt_fetch(&src, &o, out, sizeof out, &err),
			 DT_ERR_INTERRUPTED);
	assert_msg_has(&err, "id=int: download interrupted");
	ck_assert_int_eq(cache_count(cache, ""), 0);
}
END_TEST

START_TEST(test_concurrent_fetches)
{
	struct dt_fetch_opts o;
	char cache[PATH_MAX], u[PATH_MAX], out[PATH_MAX];
	struct dt_fetch_source src = { .sha256 = data_sha };
	struct dt_error err;
	pid_t kids[2];

	/* Two processes (ranks on one node) want the same file; the first
	 * stalls half a second mid-body, so the second surely arrives while
	 * the first is still at it. The lock makes it wait and take the
	 * finished file: the server sees only the first one's requests. */
	test_opts(&o, cache, "concurrent");
	url(u, "/data.bin?fault=slow&n=1&secs=0.5&id=conc");
	src.url = u;
	for (int k = 0; k < 2; k++) {
		kids[k] = fork();
		ck_assert_int_ge(kids[k], 0);
		if (kids[k] == 0) {
			if (k == 1)
				usleep(100000);
			_exit(dt_fetch(&src, &o, out, sizeof out, &err) ==
			      DT_OK ? 0 : 1);
		}
	}
	for (int k = 0; k < 2; k++) {
		int status;

		ck_assert_int_eq(waitpid(kids[k], &status, 0), kids[k]);
		ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	ck_assert_int_eq(log_count("id=conc range=- status=200"), 1);
	ck_assert_int_eq(log_count("id=conc range=bytes=75000- status=206"), 1);
	ck_assert_int_eq(log_count("id=conc"), 2);
	ck_assert_int_eq(dt_fetch(&src, &o, out, sizeof out, &err), DT_OK);
	assert_sha(out, data_sha);
}
END_TEST

/* Runs cmd (a NULL-terminated argv, searched in PATH) quietly; returns
 * its exit status, or -1 when it could not run. */
static int
run_quiet(const char *const *argv)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(null, STDOUT_FILENO);
		dup2(null, STDERR_FILENO);
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

START_TEST(test_tls)
{
	struct dt_fetch_opts o;
	char cache[PATH_MAX], u[PATH_MAX * 2], out[PATH_MAX];
	char cert[PATH_MAX], key[PATH_MAX];
	struct dt_fetch_source src = { .sha256 = data_sha };
	struct dt_error err;
	pid_t pid;
	int tls_port;

	snprintf(cert, sizeof cert, "%s/cert.pem", tmpdir);
	snprintf(key, sizeof key, "%s/key.pem", tmpdir);
	{
		const char *gen[] = {
			"openssl", "req", "-x509", "-newkey", "ec",
			"-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
			"-keyout", key, "-out", cert, "-days", "2",
			"-subj", "/CN=127.0.0.1",
			"-addext", "subjectAltName=IP:127.0.0.1", NULL
		};

		if (run_quiet(gen) != 0) {
			fprintf(stderr, "test_tls: no openssl command; the "
				"HTTPS checks are skipped\n");
			return;
		}
	}
	{
		const char *extra[] = { "--tls-cert", cert, "--tls-key", key,
					NULL };

		tls_port = start_server(extra, &pid);
	}
	test_opts(&o, cache, "tls");
	snprintf(u, sizeof u, "https://127.0.0.1:%d/data.bin", tls_port);
	src.url = u;

	/* A certificate nobody vouches for is refused... */
	ck_assert_int_eq(dt_fetch(&src, &o, out, sizeof out, &err),
			 DT_ERR_NET);
	assert_msg_has(&err, "the server's TLS certificate does not verify");
	ck_assert_int_eq(cache_count(cache, ""), 0);

	/* ...and accepted when its CA is given. */
	o.ca_file = cert;
	ck_assert_int_eq(dt_fetch(&src, &o, out, sizeof out, &err), DT_OK);
	assert_sha(out, data_sha);

	/* An https URL is never redirected to plain http. */
	snprintf(u, sizeof u, "https://127.0.0.1:%d/data.bin?fault=redirect&"
		 "to=http://127.0.0.1:%d/data.bin", tls_port, port);
	ck_assert_int_eq(dt_fetch(&src, &o, out, sizeof out, &err),
			 DT_ERR_NET);
	assert_msg_has(&err, ": refusing the redirect to http://127.0.0.1:");
	assert_msg_has(&err, "from https only https");
	ck_assert_int_eq(cache_count(cache, ""), 1);
	stop_server(pid);
}
END_TEST

static Suite *
fetch_suite(void)
{
	Suite *s = suite_create("fetch");
	TCase *tc = tcase_create("fetch");

	tcase_add_unchecked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_sha256_known);
	tcase_add_test(tc, test_local_path);
	tcase_add_test(tc, test_bad_sources);
	tcase_add_test(tc, test_cache_names_and_places);
	tcase_add_test(tc, test_download_and_cache);
	tcase_add_test(tc, test_not_found);
	tcase_add_test(tc, test_head);
	tcase_add_test(tc, test_server_errors_retried);
	tcase_add_test(tc, test_dropped_connection_resumes);
	tcase_add_test(tc, test_resume_from_part);
	tcase_add_test(tc, test_header_lines);
	tcase_add_test(tc, test_sniff_kinds);
	tcase_add_test(tc, test_html_page_not_cached);
	tcase_add_test(tc, test_digest_cache);
	tcase_add_test(tc, test_check_whole);
	tcase_add_test(tc, test_unmarked_end);
	tcase_add_test(tc, test_wrong_content);
	tcase_add_test(tc, test_size_limits);
	tcase_add_test(tc, test_redirects);
	tcase_add_test(tc, test_stalled_body);
	tcase_add_test(tc, test_connection_refused);
	tcase_add_test(tc, test_progress_bar);
	tcase_add_test(tc, test_interrupt);
	tcase_add_test(tc, test_concurrent_fetches);
	tcase_add_test(tc, test_tls);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr;
	char py[PATH_MAX];
	int failed;

	if (!find_python(py, sizeof py)) {
		fprintf(stderr, "test_fetch: python3 is not on PATH; "
			"skipping\n");
		return 77;
	}
	/* The tests talk to 127.0.0.1 only; a proxy would get in the way. */
	unsetenv("http_proxy");
	unsetenv("https_proxy");
	unsetenv("HTTPS_PROXY");
	unsetenv("all_proxy");
	unsetenv("ALL_PROXY");
	sr = srunner_create(fetch_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

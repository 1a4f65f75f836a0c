/* SPDX-License-Identifier: MIT */
/* cpu_features.c - the processor's instruction sets from CPUID and the
 * DTRAIN_CPU override (cpu_features.h).
 *
 * AVX2, FMA and AVX-512F come from GCC's __builtin_cpu_supports, which also
 * checks that the operating system saves the wide registers (XGETBV).
 * AVX512_BF16 and AMX-BF16 are read from CPUID leaf 7 (Intel's Software
 * Developer's Manual, vol. 2A, "CPUID"; AVX512_BF16 is subleaf 1, EAX bit
 * 5; AMX-BF16 subleaf 0, EDX bit 22) through cpuid.h, as not every
 * compiler's builtin knows them, with XGETBV for the AVX-512 and tile
 * state. Linux also asks a process to request the tile state before it
 * uses AMX (arch_prctl ARCH_REQ_XCOMP_PERM); this file only reports it. */
#include "util/cpu_features.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#define CPU_X86 1
#endif

#define ALL_SETS (DT_CPU_AVX2 | DT_CPU_FMA | DT_CPU_AVX512F | \
		  DT_CPU_AVX512_BF16 | DT_CPU_AMX_BF16)

static const char *const kind_names[] = {
	"generic", "avx2", "avx512", "avx512_bf16",
};

static const struct {
	unsigned flag;
	const char *name;
} set_names[] = {
	{ DT_CPU_AVX2, "avx2" }, { DT_CPU_FMA, "fma" },
	{ DT_CPU_AVX512F, "avx512f" }, { DT_CPU_AVX512_BF16, "avx512_bf16" },
	{ DT_CPU_AMX_BF16, "amx_bf16" },
};

static struct {
	unsigned detected;	/* what CPUID and the OS give */
	unsigned allowed;	/* detected, less what DTRAIN_CPU takes */
	const char *env;	/* DTRAIN_CPU, NULL when unset or empty */
	int env_bad;		/* DTRAIN_CPU names no kind */
	char brand[49];		/* CPUID's brand string, "" where none */
	enum dt_cpu_vendor vendor;
	unsigned family, model;	/* leaf 1's, extended parts added */
} cpu;
static pthread_once_t cpu_once = PTHREAD_ONCE_INIT;

#ifdef CPU_X86
/* XCR0, the register state the OS saves; 0 where XGETBV is not enabled. */
static unsigned long long
xcr0(void)
{
	unsigned a, b, c, d, lo, hi;

	if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27)))
		return 0;
	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	return (unsigned long long)hi << 32 | lo;
}

static unsigned
detect(void)
{
	unsigned f = 0, a, b, c, d;
	unsigned long long x = xcr0();

	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx2"))
		f |= DT_CPU_AVX2;
	if (__builtin_cpu_supports("fma"))
		f |= DT_CPU_FMA;
	if (__builtin_cpu_supports("avx512f"))
		f |= DT_CPU_AVX512F;
	/* opmask, upper 256 bits of zmm0-15 and zmm16-31: XCR0 bits 5-7 */
	if ((f & DT_CPU_AVX512F) && (x & 0xe0) == 0xe0 &&
	    __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a & (1u << 5)))
		f |= DT_CPU_AVX512_BF16;
	/* tile configuration and data: XCR0 bits 17 and 18 */
	if ((x & 0x60000ull) == 0x60000ull &&
	    __get_cpuid_count(7, 0, &a, &b, &c, &d) && (d & (1u << 22)))
		f |= DT_CPU_AMX_BF16;
	return f;
}

static void
read_brand(char *out)
{
	unsigned r[12], a, b, c, d;
	size_t i = 0, n;

	out[0] = '\0';
	if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000004u)
		return;
	for (unsigned l = 0; l < 3; l++)
		__get_cpuid(0x80000002u + l, &r[4 * l], &r[4 * l + 1],
			    &r[4 * l + 2], &r[4 * l + 3]);
	memcpy(out, r, 48);
	out[48] = '\0';
	while (out[i] == ' ')
		i++;
	memmove(out, out + i, strlen(out + i) + 1);
	for (n = strlen(out); n > 0 && out[n - 1] == ' '; n--)
		out[n - 1] = '\0';
}

/* Vendor, family and model from leaves 0 and 1 (Intel's SDM vol. 2A,
 * "CPUID", EAX of leaf 1: the extended family is added where the family
 * is 0Fh, the extended model is the high nibble where the family is 06h
 * or 0Fh; AMD's APM vol. 3 the same for 0Fh). */
static void
read_id(void)
{
	unsigned a, b, c, d, fam, mod;

	if (!__get_cpuid(0, &a, &b, &c, &d))
		return;
	if (b == 0x756e6547u && d == 0x49656e69u && c == 0x6c65746eu)
		cpu.vendor = DT_CPU_VENDOR_INTEL;	/* GenuineIntel */
	else if (b == 0x68747541u && d == 0x69746e65u && c == 0x444d4163u)
		cpu.vendor = DT_CPU_VENDOR_AMD;		/* AuthenticAMD */
	if (!__get_cpuid(1, &a, &b, &c, &d))
		return;
	fam = (a >> 8) & 0xfu;
	mod = (a >> 4) & 0xfu;
	if (fam == 0xfu || fam == 0x6u)
		mod |= ((a >> 16) & 0xfu) << 4;
	if (fam == 0xfu)
		fam += (a >> 20) & 0xffu;
	cpu.family = fam;
	cpu.model = mod;
}
#else
static void
read_id(void)
{
}

static unsigned
detect(void)
{
	return 0;
}

static void
read_brand(char *out)
{
	out[0] = '\0';
}
#endif

/* The sets a kind may use. */
static unsigned
kind_sets(enum dt_cpu_kind k)
{
	switch (k) {
	case DT_CPU_KIND_GENERIC:
		return 0;
	case DT_CPU_KIND_AVX2:
		return DT_CPU_AVX2 | DT_CPU_FMA;
	case DT_CPU_KIND_AVX512:
		return DT_CPU_AVX2 | DT_CPU_FMA | DT_CPU_AVX512F;
	case DT_CPU_KIND_AVX512_BF16:
		break;
	}
	return ALL_SETS;
}

static void
init(void)
{
	const char *e = getenv("DTRAIN_CPU");
	unsigned mask = ALL_SETS;

	cpu.detected = detect();
	read_brand(cpu.brand);
	read_id();
	if (e != NULL && *e != '\0') {
		size_t k;

		cpu.env = e;
		for (k = 0; k < sizeof kind_names / sizeof kind_names[0]; k++)
			if (strcmp(e, kind_names[k]) == 0)
				break;
		cpu.env_bad = k == sizeof kind_names / sizeof kind_names[0];
		mask = cpu.env_bad ? 0 : kind_sets((enum dt_cpu_kind)k);
	}
	cpu.allowed = cpu.detected & mask;
}

int
dt_cpu_has(unsigned flags)
{
	pthread_once(&cpu_once, init);
	return (cpu.allowed & flags) == flags;
}

enum dt_cpu_kind
dt_cpu_kind(void)
{
	enum dt_cpu_kind k = DT_CPU_KIND_AVX512_BF16;

	while (k > DT_CPU_KIND_GENERIC &&
	       !dt_cpu_has(kind_sets(k) & ~DT_CPU_AMX_BF16))
		k--;
	return k;
}

const char *
dt_cpu_kind_name(enum dt_cpu_kind kind)
{
	return kind_names[kind];
}

/* Appends printf's output to the string in buf (n bytes), cut to fit. */
__attribute__((format(printf, 3, 4))) static void
append(char *buf, size_t n, const char *fmt, ...)
{
	size_t len = strlen(buf);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf + len, n - len, fmt, ap);
	va_end(ap);
}

void
dt_cpu_describe(char *buf, size_t n)
{
	enum dt_cpu_kind k = dt_cpu_kind();

	if (n == 0)
		return;
	buf[0] = '\0';
	append(buf, n, "%s", kind_names[k]);
	if (cpu.env != NULL)
		append(buf, n, " (DTRAIN_CPU=%s%s)", cpu.env, cpu.env_bad ?
		       ", which names no kind (generic, avx2, avx512,"
		       " avx512_bf16): taken as generic" : "");
	append(buf, n, "; CPUID:");
	for (size_t i = 0; i < sizeof set_names / sizeof set_names[0]; i++)
		if (cpu.detected & set_names[i].flag)
			append(buf, n, " %s%s", cpu.allowed &
			       set_names[i].flag ? "" : "-",
			       set_names[i].name);
	if (cpu.detected == 0)
		append(buf, n, " no avx2, fma or avx512f");
	if (cpu.brand[0] != '\0')
		append(buf, n, "; %s", cpu.brand);
}

int
dt_cpu_fma512_rule(const struct dt_cpu_id *id, char *buf, size_t n)
{
	const char *why;
	int full = 0;

	if (n > 0)
		buf[0] = '\0';
	if (!(id->sets & DT_CPU_AVX512F)) {
		why = "no AVX-512F";
	} else if (id->sets & DT_CPU_AMX_BF16) {
		why = "AMX-BF16: two 512-bit FMA ports a core";
		full = 1;
	} else if (id->vendor == DT_CPU_VENDOR_AMD && id->family == 0x1a &&
		   (id->model <= 0x1f ||
		    (id->model >= 0x40 && id->model <= 0x4f))) {
		why = "Zen 5 with a 512-bit FPU datapath";
		full = 1;
	} else if (id->vendor == DT_CPU_VENDOR_AMD && id->family == 0x19) {
		why = "Zen 4: AVX-512 on 256-bit units";
	} else {
		why = "not known by CPUID to run 512-bit FMAs at full width";
	}
	if (n > 0) {
		append(buf, n, "%s", why);
		if (id->vendor != DT_CPU_VENDOR_OTHER)
			append(buf, n, " (%s family %02Xh model %02Xh)",
			       id->vendor == DT_CPU_VENDOR_AMD ? "AMD" :
			       "Intel", id->family, id->model);
	}
	return full;
}

int
dt_cpu_fma512_full(char *buf, size_t n)
{
	struct dt_cpu_id id;

	pthread_once(&cpu_once, init);
	id.vendor = cpu.vendor;
	id.family = cpu.family;
	id.model = cpu.model;
	id.sets = cpu.allowed;
	return dt_cpu_fma512_rule(&id, buf, n);
}

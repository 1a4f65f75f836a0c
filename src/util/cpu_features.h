/* SPDX-License-Identifier: MIT */
/* cpu_features.h - the instruction sets this x86-64 processor has, read from
 * CPUID once, and the kind of CPU dtrain's own kernels take it for, which
 * the environment variable DTRAIN_CPU may lower (never raise) so that tests
 * can run the fallback paths on a processor that has more. */
#ifndef DT_UTIL_CPU_FEATURES_H
#define DT_UTIL_CPU_FEATURES_H

#include <stddef.h>

/* One bit per instruction set, for dt_cpu_has. */
#define DT_CPU_AVX2		0x01u	/* AVX2 (256-bit integer and float) */
#define DT_CPU_FMA		0x02u	/* FMA3, fused multiply-add */
#define DT_CPU_AVX512F		0x04u	/* AVX-512 Foundation, 16 floats */
#define DT_CPU_AVX512_BF16	0x08u	/* vdpbf16ps, the bfloat16 dot */
#define DT_CPU_AMX_BF16		0x10u	/* AMX tiles with bfloat16 products */

/* The kinds of CPU, each with every set of the kinds before it. */
enum dt_cpu_kind {
	DT_CPU_KIND_GENERIC = 0,	/* x86-64's SSE2 baseline, or not x86 */
	DT_CPU_KIND_AVX2 = 1,		/* AVX2 and FMA */
	DT_CPU_KIND_AVX512 = 2,		/* and AVX-512F */
	DT_CPU_KIND_AVX512_BF16 = 3,	/* and AVX512_BF16 */
};

/* Whether every set of flags (DT_CPU_* bits) is present and allowed: the
 * processor and its operating system support it (CPUID and, for the wide
 * registers, XGETBV's enabled state), and DTRAIN_CPU does not take it away.
 * The first call reads CPUID and the environment; later calls only a
 * cached word. Thread-safe; allocates nothing. */
int dt_cpu_has(unsigned flags);

/* The kind dtrain's kernels take this CPU for: the highest kind whose sets
 * are all allowed, at most DTRAIN_CPU's kind where it is set. */
enum dt_cpu_kind dt_cpu_kind(void);

/* The kind's name as DTRAIN_CPU spells it: "generic", "avx2", "avx512" or
 * "avx512_bf16". A static string. */
const char *dt_cpu_kind_name(enum dt_cpu_kind kind);

/* One line, no newline, into buf (n bytes; cut short to fit): the kind,
 * the DTRAIN_CPU override where it is set (a value that names no kind is
 * taken as "generic", and the line says so), the sets CPUID and the OS
 * give, a "-" before each that the override takes away, and the
 * processor's brand string: "avx2 (DTRAIN_CPU=avx2); CPUID: avx2 fma
 * -avx512f -avx512_bf16 -amx_bf16; Intel(R) Xeon(R) Processor". Never
 * fails. */
void dt_cpu_describe(char *buf, size_t n);

/* What CPUID says of a processor, for dt_cpu_fma512_rule. */
enum dt_cpu_vendor {
	DT_CPU_VENDOR_OTHER = 0,
	DT_CPU_VENDOR_INTEL,
	DT_CPU_VENDOR_AMD,
};
struct dt_cpu_id {
	enum dt_cpu_vendor vendor;
	unsigned family;	/* leaf 1's family, the extended one added */
	unsigned model;		/* leaf 1's model, the extended one above */
	unsigned sets;		/* DT_CPU_* bits allowed */
};

/* Whether a processor executes 512-bit fused multiply-adds at full width
 * (twice the f32 FLOPs of AVX2 a cycle), by CPUID alone, and in buf (n
 * bytes, cut to fit) why, as one phrase. Yes: AVX-512F allowed and either
 * AMX-BF16 (Intel's Sapphire Rapids and later Xeons, two 512-bit FMA
 * ports a core) or AMD family 1Ah (Zen 5) models 00h-1Fh (Turin, Turin
 * Dense) or 40h-4Fh (Granite Ridge), whose FPU has a 512-bit datapath
 * (AMD's Zen 5 software optimization guide, 58455). No for every other
 * processor: AMD family 19h (Zen 4) runs AVX-512 on 256-bit units, the
 * mobile Zen 5 parts (Strix Point, Krackan) likewise, and Intel's earlier
 * AVX-512 parts have one or two 512-bit FMA ports by SKU, which CPUID
 * does not tell; no is the safe answer (dtrain's older default).
 * Pure: for tests. */
int dt_cpu_fma512_rule(const struct dt_cpu_id *id, char *buf, size_t n);

/* dt_cpu_fma512_rule for this processor as DTRAIN_CPU leaves it (no
 * where it takes AVX-512F away). buf may be NULL when n is 0. */
int dt_cpu_fma512_full(char *buf, size_t n);

#endif

/* SPDX-License-Identifier: MIT */
/* endian.c - little- and big-endian fields and arrays (see endian.h). */
#include "util/endian.h"

#include <string.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define HOST_IS_LE 0
#else
#define HOST_IS_LE 1
#endif

void
dt_le_put(unsigned char *p, uint64_t v, int size)
{
	for (int i = 0; i < size; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

uint64_t
dt_le_get(const unsigned char *p, int size)
{
	uint64_t v = 0;

	for (int i = size - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

void
dt_le_put_f32(unsigned char *out, const float *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint32_t u;

		memcpy(&u, &p[i], 4);
		dt_le_put(out + 4 * i, u, 4);
	}
}

void
dt_bswap(void *data, size_t elem_size, size_t count)
{
	unsigned char *p = data;

	/* memcpy because the buffer is only byte-aligned as far as this
	 * code knows; compilers turn each iteration into a load, a bswap
	 * and a store. */
	switch (elem_size) {
	case 0:
	case 1:
		break;
	case 2:
		for (size_t i = 0; i < count; i++) {
			uint16_t v;

			memcpy(&v, p + 2 * i, 2);
			v = __builtin_bswap16(v);
			memcpy(p + 2 * i, &v, 2);
		}
		break;
	case 4:
		for (size_t i = 0; i < count; i++) {
			uint32_t v;

			memcpy(&v, p + 4 * i, 4);
			v = __builtin_bswap32(v);
			memcpy(p + 4 * i, &v, 4);
		}
		break;
	case 8:
		for (size_t i = 0; i < count; i++) {
			uint64_t v;

			memcpy(&v, p + 8 * i, 8);
			v = __builtin_bswap64(v);
			memcpy(p + 8 * i, &v, 8);
		}
		break;
	default:
		for (size_t i = 0; i < count; i++) {
			unsigned char *e = p + i * elem_size;

			for (size_t k = 0; k < elem_size / 2; k++) {
				unsigned char t = e[k];

				e[k] = e[elem_size - 1 - k];
				e[elem_size - 1 - k] = t;
			}
		}
		break;
	}
}

void
dt_le_to_host(void *data, size_t elem_size, size_t count)
{
	if (!HOST_IS_LE)
		dt_bswap(data, elem_size, count);
}

void
dt_be_to_host(void *data, size_t elem_size, size_t count)
{
	if (HOST_IS_LE)
		dt_bswap(data, elem_size, count);
}

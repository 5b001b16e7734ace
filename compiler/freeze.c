/*
 * freeze.c - `--freeze INPUT=v0,v1,...`: fix the values of a graph input at
 * compile time.
 *
 * Some inputs decide shapes (Range's limit, Reshape's shape, TopK's K, the
 * condition of Compress, NonZero's data). An ahead-of-time compiler needs
 * them before run time; freezing gives them. The values then fold like
 * constants, but the input stays in the interface: the generated code
 * checks at the start of every run that the caller passed exactly these
 * values and returns KILN_FROZEN_INPUT otherwise (emit_c.c), so a frozen
 * build never computes a silently wrong result.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sig.h"

/* One number in the input's element type, little-endian, into p. */
static bool store(int dtype, const char *s, const char *end, void *p)
{
	char buf[64];
	size_t n = (size_t)(end - s);
	if (n == 0 || n >= sizeof buf)
		return false;
	memcpy(buf, s, n);
	buf[n] = 0;
	char *e;
	errno = 0;
	if (dtype == DT_FLOAT || dtype == DT_DOUBLE) {
		double v = strtod(buf, &e);
		if (*e || errno == ERANGE)
			return false;
		if (dtype == DT_FLOAT) {
			float f = (float)v;
			if (isinf(f) && !isinf(v))
				return false;
			memcpy(p, &f, 4);
		} else {
			memcpy(p, &v, 8);
		}
		return true;
	}
	if (dtype == DT_BOOL) {
		uint8_t b;
		if (strcmp(buf, "1") == 0 || strcmp(buf, "true") == 0)
			b = 1;
		else if (strcmp(buf, "0") == 0 || strcmp(buf, "false") == 0)
			b = 0;
		else
			return false;
		memcpy(p, &b, 1);
		return true;
	}
	bool is_unsigned = dtype == DT_UINT8 || dtype == DT_UINT16 || dtype == DT_UINT32 ||
	                   dtype == DT_UINT64;
	if (is_unsigned) {
		if (buf[0] == '-')
			return false;
		unsigned long long v = strtoull(buf, &e, 10);
		int bits = (int)dtype_size(dtype) * 8;
		if (*e || errno == ERANGE || (bits < 64 && v >> bits))
			return false;
		memcpy(p, &v, dtype_size(dtype));   /* the low bytes: little-endian hosts */
		return true;
	}
	if (dtype == DT_INT8 || dtype == DT_INT16 || dtype == DT_INT32 || dtype == DT_INT64) {
		long long v = strtoll(buf, &e, 10);
		int bits = (int)dtype_size(dtype) * 8;
		if (*e || errno == ERANGE ||
		    (bits < 64 && (v < -(1LL << (bits - 1)) || v >= (1LL << (bits - 1)))))
			return false;
		if (bits == 8) {
			int8_t x = (int8_t)v;
			memcpy(p, &x, 1);
		} else if (bits == 16) {
			int16_t x = (int16_t)v;
			memcpy(p, &x, 2);
		} else if (bits == 32) {
			int32_t x = (int32_t)v;
			memcpy(p, &x, 4);
		} else {
			int64_t x = v;
			memcpy(p, &x, 8);
		}
		return true;
	}
	return false;
}

const Tensor *freeze_values(const char *name, int dt, const char *text, Arena *a, Diag *d)
{
	if (!dtype_valid(dt) || dt == DT_STRING || dt == DT_FLOAT16 || dt == DT_BFLOAT16 ||
	    DT_IS_FLOAT8(dt) || DT_IS_4BIT(dt) || dtype_size(dt) == 0)
		diag_fail(d, KILN_USAGE, "--freeze %s: inputs of type %s cannot be frozen", name,
		          dtype_name(dt));
	int64_t count = *text ? 1 : 0;   /* "X=": an empty tensor */
	for (const char *s = text; *s; s++)
		count += *s == ',';
	if (count > (1 << 20))
		diag_fail(d, KILN_LIMIT, "--freeze %s: more than %d values", name, 1 << 20);
	size_t esz = dtype_size(dt);
	unsigned char *bytes = arena_alloc(a, (size_t)count * esz + 1);
	const char *s = text;
	for (int64_t i = 0; i < count; i++) {
		const char *e = strchr(s, ',');
		if (!e)
			e = s + strlen(s);
		if (!store(dt, s, e, bytes + (size_t)i * esz))
			diag_fail(d, KILN_USAGE, "--freeze %s: '%.*s' is not a %s value", name,
			          (int)(e - s), s, dtype_name(dt));
		s = *e ? e + 1 : e;
	}
	Tensor *t = arena_alloc(a, sizeof *t);
	memset(t, 0, sizeof *t);
	t->dtype = dt;
	t->shape.rank = 1;
	t->shape.dims[0] = (Dim){count, NULL};
	t->w.bytes = bytes;
	t->w.nbytes = (uint64_t)count * esz;
	t->w.nelem = count;
	return t;
}

/* Test data small enough to freeze: shapes, bounds, axes, scales. */
bool freeze_candidate(const Tensor *t)
{
	return t->dtype != DT_STRING && !DT_IS_FLOAT8(t->dtype) && !DT_IS_4BIT(t->dtype) && t->w.nelem <= 64;
}

/* The compiler names the value last before the phrase:
 * `... input 2 "scales" must be known at compile time`. */
bool freeze_asked(const Diag *d, char *name, size_t cap)
{
	if (d->status != KILN_UNSUPPORTED)
		return false;
	const char *q = strstr(d->msg, "must be known at compile time");
	const char *close = NULL, *open = NULL;
	for (const char *p = q; p && p > d->msg; p--)
		if (p[-1] == '"') {
			if (!close)
				close = p - 1;
			else {
				open = p - 1;
				break;
			}
		}
	if (!open || (size_t)(close - open - 1) >= cap)
		return false;
	memcpy(name, open + 1, (size_t)(close - open - 1));
	name[close - open - 1] = 0;
	return true;
}

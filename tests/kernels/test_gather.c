/*
 * test_gather.c - kiln_gather and kiln_gather_i32 against a reference that
 * copies one element at a time.
 *
 * Valid cases draw indices from the whole of [-axis_len, axis_len), so
 * negative indices are exercised everywhere, over several element sizes
 * (including 3, which has no special path), scalar and repeated indices,
 * inner == 1 and empty outer or index sets, 4-byte blocks of 1- and 2-byte
 * elements along axes up to 32 and beyond (the vector paths of gather/);
 * results must match exactly and
 * the call must return KILN_OK.
 * Invalid cases put one out-of-range index (axis_len, -axis_len - 1, the
 * extremes of the index type) first, in the middle or last, or use an empty
 * axis. The call must return KILN_SHAPE_ERROR and leave every byte of the
 * output, and the guards around it, as they were.
 */
#include "kiln/kernels.h"

#include "harness.h"

static const size_t elem_sizes[] = {1, 2, 3, 4, 8, 16};
enum { NELEM_SIZES = sizeof elem_sizes / sizeof elem_sizes[0] };
enum { SENTINEL = 0x3C };

/* Run one gather with int64 (use_i32 == 0) or int32 indices. bad_at >= 0 puts
 * bad_value at that index position and expects the error. */
static void run_case(int64_t outer, int64_t axis_len, int64_t inner, int64_t nidx, size_t eb,
                     int use_i32, int64_t bad_at, int64_t bad_value)
{
	size_t data_bytes = (size_t)(outer * axis_len * inner) * eb;
	size_t out_bytes = (size_t)(outer * nidx * inner) * eb;
	unsigned char *data = xmalloc(data_bytes), *want = xmalloc(out_bytes);
	int64_t *idx64 = xmalloc((size_t)nidx * sizeof *idx64);
	int32_t *idx32 = xmalloc((size_t)nidx * sizeof *idx32);
	for (size_t i = 0; i < data_bytes; i++)
		data[i] = (unsigned char)rng_next();
	for (int64_t i = 0; i < nidx; i++) {
		idx64[i] = axis_len > 0 ? rng_int(-axis_len, axis_len - 1) : 0;
		if (i == bad_at)
			idx64[i] = bad_value;
		idx32[i] = (int32_t)idx64[i];
	}
	int expect_error = bad_at >= 0 || (axis_len == 0 && nidx > 0);

	if (!expect_error)
		for (int64_t o = 0; o < outer; o++)
			for (int64_t i = 0; i < nidx; i++) {
				int64_t k = idx64[i] < 0 ? idx64[i] + axis_len : idx64[i];
				for (int64_t j = 0; j < inner; j++)
					memcpy(want + (size_t)((o * nidx + i) * inner + j) * eb,
					       data + (size_t)((o * axis_len + k) * inner + j) * eb, eb);
			}

	Guarded go;
	unsigned char *out = guarded_alloc(&go, out_bytes, (size_t)(nidx % 2));
	memset(out, SENTINEL, out_bytes);
	enum kiln_status status =
		use_i32 ? kiln_gather_i32(data, idx32, out, eb, outer, axis_len, inner, nidx)
		        : kiln_gather(data, idx64, out, eb, outer, axis_len, inner, nidx);

	char what[200];
	snprintf(what, sizeof what,
	         "gather%s outer=%lld axis_len=%lld inner=%lld nindices=%lld elem=%zu "
	         "bad_at=%lld bad=%lld",
	         use_i32 ? "_i32" : "", (long long)outer, (long long)axis_len, (long long)inner,
	         (long long)nidx, eb, (long long)bad_at, (long long)bad_value);
	if (expect_error) {
		int untouched = 1;
		for (size_t i = 0; i < out_bytes; i++)
			untouched &= out[i] == SENTINEL;
		CHECK(status == KILN_SHAPE_ERROR, what);
		CHECK(untouched, what);
	} else {
		CHECK(status == KILN_OK, what);
		CHECK(memcmp(out, want, out_bytes) == 0, what);
	}
	CHECK(guarded_intact(&go), what);
	guarded_free(&go);
	free(data), free(want), free(idx64), free(idx32);
}

/* Gather of rows from a 3 x 2 int32 matrix, by hand. */
static void by_hand(void)
{
	const int32_t data[6] = {10, 11, 20, 21, 30, 31};
	const int64_t idx[3] = {2, -3, -1};
	int32_t out[6] = {0};
	CHECK(kiln_gather(data, idx, out, 4, 1, 3, 2, 3) == KILN_OK, "gather rows by hand: status");
	CHECK(out[0] == 30 && out[1] == 31 && out[2] == 10 && out[3] == 11 && out[4] == 30 &&
	      out[5] == 31, "gather rows by hand");
	/* axis 1: columns */
	const int32_t col[2] = {1, 1};
	int32_t out2[6];
	CHECK(kiln_gather_i32(data, col, out2, 4, 3, 2, 1, 2) == KILN_OK, "gather columns: status");
	CHECK(out2[0] == 11 && out2[1] == 11 && out2[2] == 21 && out2[4] == 31,
	      "gather columns by hand");
}

int main(void)
{
	static const int64_t shapes[][4] = {
		/* outer, axis_len, inner, nindices */
		{1, 1, 1, 1}, {1, 5, 1, 1}, {1, 10, 3, 4}, {3, 7, 5, 6}, {2, 100, 1, 50}, {4, 3, 17, 9},
		{1, 1000, 64, 3}, {5, 2, 2, 20}, {0, 4, 3, 2}, {3, 4, 3, 0}, {2, 4, 0, 3},
		/* 4-byte blocks of 2-byte (inner 2) and 1-byte (inner 4) elements:
		 * gather/avx512.c's permutes (axis <= 32), gather/avx2.c beyond */
		{3, 32, 2, 40}, {2, 17, 4, 21}, {2, 45, 2, 13}, {4, 9, 2, 16},
	};
	by_hand();
	for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
		for (int e = 0; e < NELEM_SIZES; e++)
			for (int use_i32 = 0; use_i32 < 2; use_i32++) {
				const int64_t *t = shapes[s];
				size_t eb = elem_sizes[e];
				run_case(t[0], t[1], t[2], t[3], eb, use_i32, -1, 0);
				if (t[3] == 0)
					continue;
				/* one bad index, first, in the middle or last */
				int64_t at[3] = {0, t[3] / 2, t[3] - 1};
				int64_t bad[4] = {t[1], -t[1] - 1, use_i32 ? INT32_MAX : INT64_MAX,
				                  use_i32 ? INT32_MIN : INT64_MIN};
				for (int a = 0; a < 3; a++)
					run_case(t[0], t[1], t[2], t[3], eb, use_i32, at[a], bad[(a + e) % 4]);
			}
	/* an empty axis: every index is out of range */
	run_case(2, 0, 3, 2, 4, 0, -1, 0);
	run_case(2, 0, 3, 2, 4, 1, -1, 0);
	for (int i = 0; i < 40; i++) {
		/* one draw per statement: argument order would differ between compilers */
		int64_t outer = rng_int(1, 4), len = rng_int(1, 30), inner = rng_int(1, 20);
		int64_t nidx = rng_int(1, 30);
		size_t eb = elem_sizes[rng_int(0, NELEM_SIZES - 1)];
		run_case(outer, len, inner, nidx, eb, i % 2, -1, 0);
	}
	return harness_report();
}

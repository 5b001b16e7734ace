/*
 * test_transpose.c - kiln_transpose against a reference that maps every
 * output index back to its input index one element at a time.
 *
 * Ranks 0 to 8, random dims (with 1s, which the kernel drops, and sizes that
 * are not multiples of its 16 x 16 tiles) and random permutations, every
 * element size with a fast path (1, 2, 4, 8, 16) and two without (3, 12),
 * plus the identity, NCHW <-> NHWC, a large 2-D transpose, empty tensors and
 * misaligned buffers. Elements are random bytes and must match exactly.
 */
#include "kiln/kernels.h"

#include "harness.h"

enum { MAX_RANK = 8 };

static const size_t elem_sizes[] = {1, 2, 3, 4, 8, 12, 16};
enum { NELEM_SIZES = sizeof elem_sizes / sizeof elem_sizes[0] };

static void run_case(int rank, const int64_t *dims, const int *perm, size_t eb, size_t misalign)
{
	int64_t total = 1, in_strides[MAX_RANK];
	for (int i = rank - 1; i >= 0; i--) {
		in_strides[i] = total;
		total *= dims[i];
	}
	size_t bytes = (size_t)total * eb;
	unsigned char *X = xmalloc(bytes), *want = xmalloc(bytes);
	for (size_t i = 0; i < bytes; i++)
		X[i] = (unsigned char)rng_next();

	/* reference: walk the output in order, find each element's input index */
	int64_t out_dims[MAX_RANK];
	for (int i = 0; i < rank; i++)
		out_dims[i] = dims[perm[i]];
	for (int64_t o = 0; o < total; o++) {
		int64_t rest = o, in = 0;
		for (int i = rank - 1; i >= 0; i--) {
			in += (rest % out_dims[i]) * in_strides[perm[i]];
			rest /= out_dims[i];
		}
		memcpy(want + (size_t)o * eb, X + (size_t)in * eb, eb);
	}

	Guarded gy;
	unsigned char *Y = guarded_alloc(&gy, bytes, misalign);
	memset(Y, 0xEE, bytes);
	kiln_transpose(X, Y, eb, rank, dims, perm);

	char what[256];
	int len = snprintf(what, sizeof what, "transpose elem=%zu misalign=%zu dims=[", eb, misalign);
	for (int i = 0; i < rank && len < 200; i++)
		len += snprintf(what + len, sizeof what - (size_t)len, "%s%lld", i ? "," : "",
		                (long long)dims[i]);
	len += snprintf(what + len, sizeof what - (size_t)len, "] perm=(");
	for (int i = 0; i < rank && len < 240; i++)
		len += snprintf(what + len, sizeof what - (size_t)len, "%s%d", i ? "," : "", perm[i]);
	snprintf(what + len, sizeof what - (size_t)len, ")");
	CHECK(memcmp(Y, want, bytes) == 0, what);
	CHECK(guarded_intact(&gy), what);
	guarded_free(&gy);
	free(X), free(want);
}

static void random_perm(int rank, int *perm)
{
	for (int i = 0; i < rank; i++)
		perm[i] = i;
	for (int i = rank - 1; i > 0; i--) {
		int j = (int)rng_int(0, i), t = perm[i];
		perm[i] = perm[j], perm[j] = t;
	}
}

/* Random dims for `rank` axes with at most about max_total elements. */
static void random_dims(int rank, int64_t max_total, int64_t *dims)
{
	int64_t total = 1;
	for (int i = 0; i < rank; i++) {
		int64_t cap = max_total / total;
		if (cap > 9)
			cap = 9;
		dims[i] = cap >= 1 ? rng_int(1, cap) : 1;
		total *= dims[i];
	}
}

int main(void)
{
	int64_t dims[MAX_RANK];
	int perm[MAX_RANK];

	/* every rank, every element size, random dims and perms */
	for (int rank = 0; rank <= MAX_RANK; rank++)
		for (int e = 0; e < NELEM_SIZES; e++)
			for (int rep = 0; rep < (rank <= 6 ? 12 : 3); rep++) {
				random_dims(rank, 3000, dims);
				random_perm(rank, perm);
				run_case(rank, dims, perm, elem_sizes[e], (size_t)(rep % 3));
			}

	/* named cases */
	for (int e = 0; e < NELEM_SIZES; e++) {
		size_t eb = elem_sizes[e];
		const int64_t nchw[4] = {2, 3, 17, 19}, nhwc[4] = {2, 17, 19, 3};
		const int to_nhwc[4] = {0, 2, 3, 1}, to_nchw[4] = {0, 3, 1, 2};
		run_case(4, nchw, to_nhwc, eb, 0);
		run_case(4, nhwc, to_nchw, eb, 0);
		const int id4[4] = {0, 1, 2, 3};
		run_case(4, nchw, id4, eb, 1);
		const int64_t mat[2] = {67, 130};
		const int swap[2] = {1, 0};
		run_case(2, mat, swap, eb, 0);
		const int64_t ones[5] = {1, 1, 5, 1, 1};
		const int rev5[5] = {4, 3, 2, 1, 0};
		run_case(5, ones, rev5, eb, 0);
		const int64_t empty[3] = {4, 0, 3};
		const int rot3[3] = {2, 0, 1};
		run_case(3, empty, rot3, eb, 0);
		const int64_t wide[3] = {3, 1, 200};
		const int p021[3] = {0, 2, 1};
		run_case(3, wide, p021, eb, 3);
		/* [N, A, B] -> [N, B, A] between MatMuls (the 8 x 8 register tiles for
		 * 4-byte elements, and their edges) */
		const int64_t batched[3] = {3, 870, 29};
		run_case(3, batched, p021, eb, (size_t)e % 3);
	}
	return harness_report();
}

/*
 * test_gemm.c - kiln_f32_gemm against a double-precision reference.
 *
 * Every shape is run with every combination of four layouts for A and four
 * for B (row-major, transposed, row-major with padded rows, both strides
 * non-unit), which between them take each of the kernel's three loop orders.
 * Operand memory that is not part of the logical matrix holds NaN, so a read
 * of the wrong element shows up in the result. C has gaps between its rows
 * that must stay untouched, and with beta == 0 it starts as NaN, which the
 * kernel must not read. Shapes cover 1, 0 (K == 0 leaves beta * C), sizes
 * that are not multiples of 4 or of the kernel's blocks (128 for K, 256 for
 * N, 64 columns on the dot-product path), 5 to 32 rows against a long
 * transposed B (computed as C^T, 16 rows of it at a time transposed into C),
 * and random shapes.
 * Where A's rows are contiguous, the same case also runs kiln_f32_gemm_pb on B
 * packed by pack.h from its layout (the compiler's packer), from the same C.
 * The binary runs under each KILN_ISA (tests/kernels/meson.build), so every
 * variant the machine has meets the same reference.
 * Tolerance: |err| <= 1e-5 * (|alpha| sum_k |A[m,k]| |B[k,n]| + |beta| |C[m,n]|).
 */
#include "kiln/kernels.h"
#include "runtime/kernels/f32-gemm/gemm.h"

#include "harness.h"

static const double GEMM_TOL = 1e-5;
static const float GAP = 7777.0f; /* the value of C between rows */

/* Where element (r, c) of an operand of rows x cols lives: r * row + c * col. */
typedef struct {
	const char *name;
	int64_t row, col;
} Layout;

enum { NLAYOUTS = 4 };

static Layout layout_of(int kind, int64_t rows, int64_t cols)
{
	switch (kind) {
	case 0: return (Layout){"row-major", cols, 1};
	case 1: return (Layout){"transposed", 1, rows};
	case 2: return (Layout){"padded-rows", cols + 5, 1};
	default: return (Layout){"strided", 2, 2 * rows + 1};
	}
}

/* A rows x cols operand in layout l: a buffer of NaN with the logical
 * elements (also returned in row-major `logical`) set to random values. */
static float *make_operand(Layout l, int64_t rows, int64_t cols, double *logical)
{
	int64_t size = rows > 0 && cols > 0 ? (rows - 1) * l.row + (cols - 1) * l.col + 1 : 1;
	float *buf = xmalloc((size_t)size * sizeof *buf);
	for (int64_t i = 0; i < size; i++)
		buf[i] = NAN;
	for (int64_t r = 0; r < rows; r++)
		for (int64_t c = 0; c < cols; c++) {
			float v = rng_float(-1.0f, 1.0f);
			buf[r * l.row + c * l.col] = v;
			logical[r * cols + c] = (double)v;
		}
	return buf;
}

/* Whether kiln_f32_gemm (B in layout lb) and kiln_f32_gemm_pb give the same
 * bits: B's rows contiguous, a wide layer (a product on activations keeps
 * the wide K blocks, a packed weight of at most GEMM_NARROW_N columns takes
 * shorter ones: gemm.h), B read in place (kiln_gemm_kc's blocks, as packed)
 * or one K block; every M (batch 1's f32-gemv too) and every variant. */
static int same_bits_expected(int64_t N, int64_t K, Layout lb)
{
	return lb.col == 1 && kiln_gemm_kc_n(K, N) == 0 &&
	       (K <= GEMM_PACK_KC || gemm_b_direct(lb.row));
}

/* kiln_gemm_run's source of B packed on the fly: any strides */
static void pack_any(const GemmBSrc *s, int64_t n0, int64_t k0, int64_t kc, float *dst)
{
	kiln_pack_b32_panel(s->src, s->rs, s->cs, s->N, n0, k0, kc, dst);
}

/* One order whichever way B comes (issue 30): the GEMM core on B in place
 * (rows contiguous), packed on the fly and packed, each in the K blocks of
 * a packed weight of N columns (kiln_gemm_kc_n, a narrow layer's, else
 * kiln_gemm_kc), gives kiln_f32_gemm_pb's bits (`want`, from C0) at every M
 * (M = 1: f32-gemv) in every variant, for narrow and wide N. */
static void same_order(int64_t M, int64_t N, int64_t K, float alpha, float beta, const float *A,
                       int64_t lda, const float *B, Layout lb, const float *Bp, const float *C0,
                       int64_t ldc, const float *want, const char *what)
{
	int64_t kc = kiln_gemm_kc_n(K, N), size = (M - 1) * ldc + N;
	float *C = xmalloc((size_t)size * sizeof *C);
	GemmEpi e = {.alpha = alpha, .beta = beta, .kc = kc > 0 ? kc : kiln_gemm_kc(K)};
	GemmBSrc srcs[3] = {
		{.packed = Bp, .N = N},
		{.pack = pack_any, .src = B, .rs = lb.row, .cs = lb.col, .N = N},
		{.direct = B, .ld = lb.row, .N = N},
	};
	static const char *names[3] = {"packed", "packed on the fly", "in place"};
	for (int s = 0; s < (lb.col == 1 ? 3 : 2); s++) {
		memcpy(C, C0, (size_t)size * sizeof *C);
		kiln_gemm_run(M, N, K, A, lda, &srcs[s], C, ldc, &e);
		int same = 1;
		for (int64_t m = 0; m < M; m++)
			same &= memcmp(C + m * ldc, want + m * ldc, (size_t)N * sizeof *C) == 0;
		char msg[400];
		snprintf(msg, sizeof msg, "%s: the core on B %s, the same bits", what, names[s]);
		CHECK(same, msg);
	}
	free(C);
}

static void run_case(int64_t M, int64_t N, int64_t K, float alpha, float beta, int a_kind,
                     int b_kind, int64_t c_pad)
{
	Layout la = layout_of(a_kind, M, K), lb = layout_of(b_kind, K, N);
	double *a = xmalloc((size_t)(M * K) * sizeof *a);
	double *b = xmalloc((size_t)(K * N) * sizeof *b);
	double *c0 = xmalloc((size_t)(M * N) * sizeof *c0);
	double *want = xmalloc((size_t)(M * N) * sizeof *want);
	double *bound = xmalloc((size_t)(M * N) * sizeof *bound);
	float *got = xmalloc((size_t)(M * N) * sizeof *got);
	float *A = make_operand(la, M, K, a);
	float *B = make_operand(lb, K, N, b);

	int64_t c_rs = N + c_pad;
	int64_t c_size = M > 0 ? (M - 1) * c_rs + N : 0;
	Guarded gc;
	float *C = guarded_alloc(&gc, (size_t)c_size * sizeof *C, 0);
	for (int64_t i = 0; i < c_size; i++)
		C[i] = GAP;
	for (int64_t m = 0; m < M; m++)
		for (int64_t n = 0; n < N; n++) {
			/* beta == 0: C is write-only, so NaN there must not reach the result */
			float v = beta == 0.0f ? NAN : rng_float(-1.0f, 1.0f);
			C[m * c_rs + n] = v;
			c0[m * N + n] = (double)v;
		}

	for (int64_t m = 0; m < M; m++)
		for (int64_t n = 0; n < N; n++) {
			double sum = 0.0, mag = 0.0;
			for (int64_t k = 0; k < K; k++) {
				sum += a[m * K + k] * b[k * N + n];
				mag += fabs(a[m * K + k] * b[k * N + n]);
			}
			want[m * N + n] = (double)alpha * sum;
			bound[m * N + n] = fabs((double)alpha) * mag;
			if (beta != 0.0f) {
				want[m * N + n] += (double)beta * c0[m * N + n];
				bound[m * N + n] += fabs((double)beta * c0[m * N + n]);
			}
		}

	float *c_start = xmalloc((size_t)(c_size > 0 ? c_size : 1) * sizeof *c_start);
	if (c_size > 0)
		memcpy(c_start, C, (size_t)c_size * sizeof *C);
	kiln_f32_gemm(M, N, K, alpha, A, la.row, la.col, B, lb.row, lb.col, beta, C, c_rs);
	float *c_kiln = xmalloc((size_t)(M * N > 0 ? M * N : 1) * sizeof *c_kiln);
	for (int64_t m = 0; m < M; m++)
		for (int64_t n = 0; n < N; n++)
			c_kiln[m * N + n] = C[m * c_rs + n];

	char what[300];
	snprintf(what, sizeof what,
	         "gemm M=%lld N=%lld K=%lld alpha=%g beta=%g A %s B %s c_row_stride=%lld",
	         (long long)M, (long long)N, (long long)K, (double)alpha, (double)beta, la.name,
	         lb.name, (long long)c_rs);
	int gaps_ok = 1;
	for (int64_t m = 0; m < M; m++) {
		for (int64_t n = 0; n < N; n++)
			got[m * N + n] = C[m * c_rs + n];
		if (m + 1 < M)
			for (int64_t n = N; n < c_rs; n++)
				gaps_ok &= C[m * c_rs + n] == GAP;
	}
	CHECK_CLOSE(what, got, want, bound, M * N, GEMM_TOL);
	if (c_pad > 0)
		CHECK(gaps_ok, what);
	CHECK(guarded_intact(&gc), what);

	if (la.col == 1 && M > 0 && N > 0) {
		float *Bp = xmalloc((size_t)(K * N > 0 ? K * N : 1) * sizeof *Bp);
		kiln_pack_b32(B, lb.row, lb.col, K, N, Bp);
		memcpy(C, c_start, (size_t)c_size * sizeof *C);
		kiln_f32_gemm_pb(M, N, K, alpha, A, la.row, Bp, beta, C, c_rs, NULL);
		for (int64_t m = 0; m < M; m++)
			for (int64_t n = 0; n < N; n++)
				got[m * N + n] = C[m * c_rs + n];
		size_t len = strlen(what);
		snprintf(what + len, sizeof what - len, " (packed B, %s)", kiln_isa_name());
		CHECK_CLOSE(what, got, want, bound, M * N, GEMM_TOL);
		CHECK(guarded_intact(&gc), what);
		if (K > 0)
			same_order(M, N, K, alpha, beta, A, la.row, B, lb, Bp, c_start, c_rs, C, what);
		if (same_bits_expected(N, K, lb)) {
			/* the same tiles' sums in the same order as B read in place (or
			 * packed on the fly, one K block): the same bits, whichever tile
			 * width the packed path takes */
			int same = 1;
			for (int64_t m = 0; m < M; m++)
				for (int64_t n = 0; n < N; n++)
					same &= memcmp(&got[m * N + n], &c_kiln[m * N + n], sizeof(float)) == 0;
			CHECK(same, what);
		}
		free(Bp);
	}

	guarded_free(&gc);
	free(c_start);
	free(A), free(B), free(a), free(b), free(c0), free(want), free(bound), free(got);
	free(c_kiln);
}

/* (alpha, beta) pairs; beta == 0 also starts C as NaN */
static const float alpha_beta[][2] = {
	{1.0f, 0.0f}, {1.0f, 1.0f}, {0.5f, -2.0f}, {-1.5f, 0.25f}, {2.0f, 0.0f}, {0.0f, 0.5f},
};
enum { NALPHA_BETA = sizeof alpha_beta / sizeof alpha_beta[0] };

/* Every layout of A with every layout of B; small shapes with every (alpha,
 * beta) pair, large ones with one pair that shifts with `shape_index`, so that
 * every layout pair still meets every (alpha, beta) over the list. Gaps
 * between rows of C come and go at random. */
static void run_shape(int64_t M, int64_t N, int64_t K, int shape_index)
{
	int every_pair = M * N * K <= 300000;
	for (int la = 0; la < NLAYOUTS; la++)
		for (int lb = 0; lb < NLAYOUTS; lb++)
			for (int ab = 0; ab < NALPHA_BETA; ab++) {
				if (!every_pair && ab != (la * NLAYOUTS + lb + shape_index) % NALPHA_BETA)
					continue;
				run_case(M, N, K, alpha_beta[ab][0], alpha_beta[ab][1], la, lb,
				         rng_int(0, 1) ? 3 : 0);
			}
}

/* M == 0 or N == 0: nothing may be written. */
static void empty_output(void)
{
	float C[4] = {GAP, GAP, GAP, GAP}, A[4] = {1, 2, 3, 4}, B[4] = {1, 2, 3, 4};
	kiln_f32_gemm(0, 2, 2, 1.0f, A, 2, 1, B, 2, 1, 0.0f, C, 2);
	kiln_f32_gemm(2, 0, 2, 1.0f, A, 2, 1, B, 2, 1, 0.0f, C, 2);
	kiln_f32_gemm(0, 0, 0, 1.0f, A, 2, 1, B, 2, 1, 0.0f, C, 2);
	CHECK(C[0] == GAP && C[1] == GAP && C[2] == GAP && C[3] == GAP,
	      "gemm with M == 0 or N == 0 writes nothing");
}

/* A tiny product checked by hand, so the reference is not the only judge. */
static void by_hand(void)
{
	const float A[6] = {1, 2, 3, 4, 5, 6}; /* 2 x 3 */
	const float B[6] = {7, 8, 9, 10, 11, 12}; /* 3 x 2 */
	float C[4] = {1, 1, 1, 1};
	kiln_f32_gemm(2, 2, 3, 1.0f, A, 3, 1, B, 2, 1, 10.0f, C, 2);
	CHECK(C[0] == 68 && C[1] == 74 && C[2] == 149 && C[3] == 164, "gemm 2x3 by 3x2 by hand");
	/* A^T B^T with the same buffers read as 3 x 2 and 2 x 3 */
	float D[9];
	kiln_f32_gemm(3, 3, 2, 1.0f, A, 1, 3, B, 1, 2, 0.0f, D, 3);
	CHECK(D[0] == 1 * 7 + 4 * 8 && D[4] == 2 * 9 + 5 * 10 && D[8] == 3 * 11 + 6 * 12,
	      "gemm transposed operands by hand");
}

int main(void)
{
	static const int64_t shapes[][3] = {
		{1, 1, 1}, {1, 1, 0}, {3, 5, 0}, {4, 4, 0}, {1, 1, 7}, {1, 9, 1}, {9, 1, 1},
		{1, 300, 3}, {300, 1, 3}, {1, 1, 300}, {2, 3, 4}, {4, 4, 4}, {5, 7, 3}, {8, 8, 8},
		{13, 17, 9}, {3, 65, 5}, {6, 63, 67}, {33, 65, 129}, {7, 257, 130}, {5, 258, 3},
		{64, 64, 64}, {67, 300, 260}, {25, 33, 600}, {1, 70, 513}, {12, 32, 31},
		{24, 64, 16}, {2, 48, 9}, {5, 1024, 20}, {50, 32, 513}, {13, 48, 256},
		{16, 1000, 256}, {32, 300, 256}, {20, 513, 100}, {7, 64, 1000},
		/* narrow last panels under many tiles (a bug of an earlier packed-A
		 * kernel); full 12-row tiles with k left over after the steps of
		 * four (caught a tail bug of a kernel that was not landed) */
		{67, 600, 300}, {28, 520, 200}, {36, 96, 131}, {24, 40, 7},
		/* B in place in more than one L2 block: two groups of K blocks,
		 * each panel a block of its own */
		{13, 70, 4500},
		/* full 12 x 32 tiles (AVX-512: the assembly k loop and its stores)
		 * over two K blocks with k left over in each (the second block
		 * adds to C), with every (alpha, beta); and A's rows 4 KiB apart
		 * (K = 1024: copied a tile at a time) */
		{12, 64, 259}, {24, 70, 1024},
		/* AVX-512's 6 x 64 tiles on packed B (two panels side by side, 64
		 * rows or more): tiles of 6 and 5 rows, a pair and an odd last
		 * panel (full or narrow), k left over, two K blocks */
		{64, 128, 9}, {67, 64, 7}, {70, 192, 33}, {65, 96, 258}, {71, 84, 5}, {100, 128, 130},
		/* one row (f32-gemv) with a narrow last panel read flat: widths 1 to
		 * 24 whose rows repeat every 1 to 4 vectors, K not a multiple of the
		 * rows of one repeat, and widths that are not (9, 20) */
		{1, 24, 150}, {1, 88, 17}, {1, 8, 50}, {1, 100, 101}, {1, 16, 5}, {1, 2, 33},
		{1, 6, 2}, {1, 12, 7}, {1, 28, 9}, {1, 20, 40}, {1, 41, 3},
		/* a narrow layer's K blocks (gemm.h kiln_gemm_kc_n): four of 8,
		 * four of 32, 4 x 75 past 256 rows, 5 x 220 (f32-gemv: a group of
		 * four blocks side by side, then one), two of 9 and 8; N = 49 and
		 * 64, wide */
		{1, 5, 32}, {16, 10, 128}, {1, 10, 300}, {3, 16, 1100}, {3, 33, 17}, {16, 40, 64},
		{1, 49, 64}, {16, 64, 64},
	};
	int shape_index = 0;
	by_hand();
	empty_output();
	for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
		run_shape(shapes[i][0], shapes[i][1], shapes[i][2], shape_index++);
	for (int i = 0; i < 30; i++) {
		/* one draw per statement: argument order would differ between compilers */
		int64_t M = rng_int(1, 40), N = rng_int(1, 90), K = rng_int(1, 70);
		run_shape(M, N, K, shape_index++);
	}
	return harness_report();
}

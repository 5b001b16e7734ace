/*
 * test_dotpath.c - the GEMM's few-row products against a transposed B (the
 * dot path of f32-gemm/avx2.c and avx512.c, kiln_f32_gemm_ep and
 * kiln_f32_gemm_f16b) and float16 weights at batch 1 (f32-gemv/avx512.c):
 * the same bits under KILN_ISA=ref, avx2 and avx512 (issue 30), and within
 * tolerance of a double-precision reference.
 *
 * Without arguments the binary runs itself once per variant (KILN_ISA set,
 * argument "child") and compares the FNV-1a hashes of every output byte the
 * children print; a variant the CPU lacks falls back (runtime/kernels/isa.h)
 * and gives the ref bits trivially. Cases: M = 1 to 5 rows (5: the tiles,
 * and from N = 64 AVX-512's swapped path), odd N (1 to 67: a partial group
 * of columns) and odd K (1 to 301: a partial last step, two K blocks), alpha
 * and beta (0, 1 and 0.3: beta C rounded, then added, in every variant), a
 * bias and ReLU epilogue, a B with padded rows, float and float16 B,
 * transposed and (float16) not;
 * float16 B in its natural layout at M = 1 over N = 256, 300 and 640;
 * products on weights (packed, float16 in both layouts) of narrow and wide
 * N at M = 1 to 70, each row against the same row alone, bit for bit; and
 * AVX-512's swapped path (driver.c gemm_swapped: 5 to 32 rows against a
 * transposed B of 64 columns or more, a tied embedding's LM head): every M
 * from 5 to 32, K = 1 to 511 (one K block, 256, two blocks, K not a
 * multiple of 16; M K > 8192 takes the usual path), N = 67 and 1000 (several
 * blocks of C^T), alpha, beta 0.3, padded rows of B, and bias with every
 * kind of activation (in the tile, and exp-based
 * ones over the finished rows), beta and an activation together.
 * Tolerance: |err| <= 1e-5 * (|alpha| sum_k |A[m,k]| |B[k,n]| + |beta| |C|)
 * + 1e-30.
 */
#define _POSIX_C_SOURCE 200809L  /* popen */

#include "kiln/kernels.h"
#include "runtime/kernels/f32-gemm/gemm.h"

#include "harness.h"
#include "isa_runs.h"

static uint64_t hash = 1469598103934665603u;

static void hash_bytes(const void *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		hash = (hash ^ ((const unsigned char *)p)[i]) * 1099511628211u;
}

/* The activation of kiln_epilogue act (LeakyRelu alpha 0.1, Clip to [-2,
 * 2], as run_case passes them), in double */
static double act_of(int act, double s)
{
	switch (act) {
	case KILN_ACT_RELU: return s > 0.0 ? s : 0.0;
	case KILN_ACT_LEAKY_RELU: return s < 0.0 ? 0.1 * s : s;
	case KILN_ACT_CLIP: return s < -2.0 ? -2.0 : s > 2.0 ? 2.0 : s;
	case KILN_ACT_TANH: return tanh(s);
	case KILN_ACT_SIGMOID: return 1.0 / (1.0 + exp(-s));
	case KILN_ACT_GELU: return 0.5 * s * (1.0 + erf(s / sqrt(2.0)));
	default: return s;
	}
}

enum { NOEP = -1 };

/* One case: C (M x N) = act(alpha A B + beta C + bias) (act NOEP: no
 * epilogue), B K x N at (k, n) -> rs k + cs n, float or float16 (half). */
static void run_case(int64_t M, int64_t N, int64_t K, int trans, int pad, int half, float alpha,
                     float beta, int act)
{
	int64_t ld = K + (pad ? 3 : 0);
	int64_t rs = trans ? 1 : N, cs = trans ? ld : 1;
	int64_t nb = trans ? N * ld : K * N;
	float *A = malloc((size_t)(M * K) * sizeof *A), *B = malloc((size_t)nb * sizeof *B);
	uint16_t *Bh = malloc((size_t)nb * sizeof *Bh);
	float *C = malloc((size_t)(M * N) * sizeof *C), *C0 = malloc((size_t)(M * N) * sizeof *C0);
	float *bias = malloc((size_t)N * sizeof *bias);
	fill_uniform(A, M * K, -1.0f, 1.0f);
	fill_uniform(B, nb, -1.0f, 1.0f);
	fill_uniform(C0, M * N, -1.0f, 1.0f);
	fill_uniform(bias, N, -0.5f, 0.5f);
	for (int64_t i = 0; i < nb; i++) {
		Bh[i] = kiln_f32_to_f16(B[i]);
		if (half)
			B[i] = kiln_f16_to_f32(Bh[i]);
	}
	memcpy(C, C0, (size_t)(M * N) * sizeof *C);
	kiln_epilogue ep = {.bias = bias, .act = act, .alpha = 0.1f};
	if (act == KILN_ACT_CLIP)
		ep.alpha = -2.0f, ep.beta = 2.0f;
	const kiln_epilogue *epp = act == NOEP ? NULL : &ep;
	if (half)
		kiln_f32_gemm_f16b(M, N, K, alpha, A, K, 1, Bh, rs, cs, beta, C, N, epp);
	else
		kiln_f32_gemm_ep(M, N, K, alpha, A, K, 1, B, rs, cs, beta, C, N, epp);
	hash_bytes(C, (size_t)(M * N) * sizeof *C);
	double worst = 0.0;
	for (int64_t m = 0; m < M; m++)
		for (int64_t n = 0; n < N; n++) {
			double s = 0.0, mag = 0.0;
			for (int64_t k = 0; k < K; k++) {
				double p = (double)A[m * K + k] * (double)B[k * rs + n * cs];
				s += p;
				mag += fabs(p);
			}
			double c0 = (double)C0[m * N + n];
			double want = (double)alpha * s + (double)beta * c0;
			double tol = 1e-5 * (fabs((double)alpha) * mag + fabs((double)beta * c0));
			if (act != NOEP) {
				/* the activations' slopes are at most 1.13 (GELU) */
				want = act_of(act, want + (double)bias[n]);
				tol = 1.2 * tol + 1e-6;
			}
			double err = fabs((double)C[m * N + n] - want) - tol - 1e-30;
			if (err > worst)
				worst = err;
		}
	char what[160];
	snprintf(what, sizeof what, "M %lld N %lld K %lld trans %d pad %d half %d alpha %g beta %g act %d",
	         (long long)M, (long long)N, (long long)K, trans, pad, half, (double)alpha,
	         (double)beta, act);
	CHECK(worst <= 0.0, what);
	free(A), free(B), free(Bh), free(C), free(C0), free(bias);
}

/* A product on a weight, C (M x N) = A B + bias, ReLU: B packed (form 0,
 * kiln_f32_gemm_pb) or float16 in its natural layout (1) or transposed (2,
 * kiln_f32_gemm_f16b). Hashed, within tolerance of the double product, and
 * each row the same bits as that row alone (M = 1: f32-gemv or the dot
 * path; more rows: the tiles, AVX-512's 6 x 64 tiles from 64 rows, the
 * dot path up to 4, B widened on the fly): the layer's K blocks, a narrow
 * one's shorter (gemm.h kiln_gemm_kc_n), at every M (issue 30). */
static void weight_case_ab(int64_t M, int64_t N, int64_t K, int form, float alpha, float beta)
{
	float *A = malloc((size_t)(M * K) * sizeof *A), *B = malloc((size_t)(K * N) * sizeof *B);
	float *Bp = malloc((size_t)(K * N) * sizeof *Bp), *bias = malloc((size_t)N * sizeof *bias);
	uint16_t *Bh = malloc((size_t)(K * N) * sizeof *Bh);
	float *C = malloc((size_t)(M * N) * sizeof *C), *row = malloc((size_t)N * sizeof *row);
	float *C0 = malloc((size_t)(M * N) * sizeof *C0);
	fill_uniform(C0, M * N, -1.0f, 1.0f);
	memcpy(C, C0, (size_t)(M * N) * sizeof *C);
	fill_uniform(A, M * K, -1.0f, 1.0f);
	fill_uniform(B, K * N, -1.0f, 1.0f);
	fill_uniform(bias, N, -0.5f, 0.5f);
	/* (k, n) at k N + n, or at n K + k for form 2 */
	int64_t rs = form == 2 ? 1 : N, cs = form == 2 ? K : 1;
	for (int64_t k = 0; k < K; k++)
		for (int64_t n = 0; n < N; n++) {
			uint16_t h = kiln_f32_to_f16(B[k * N + n]);
			if (form)
				B[k * N + n] = kiln_f16_to_f32(h);
			Bh[k * rs + n * cs] = h;
		}
	kiln_f32_gemm_pack_b32(B, N, 1, K, N, Bp);
	kiln_epilogue ep = {.bias = bias, .act = KILN_ACT_RELU};
	int same = 1;
	for (int64_t m = -1; m < M; m++) {  /* all rows, then each alone */
		int64_t rows = m < 0 ? M : 1;
		const float *a = A + (m < 0 ? 0 : m) * K;
		float *c = m < 0 ? C : row;
		if (m >= 0)
			memcpy(row, C0 + m * N, (size_t)N * sizeof *row);
		if (form == 0)
			kiln_f32_gemm_pb(rows, N, K, alpha, a, K, Bp, beta, c, N, &ep);
		else
			kiln_f32_gemm_f16b(rows, N, K, alpha, a, K, 1, Bh, rs, cs, beta, c, N, &ep);
		if (m >= 0)
			same &= memcmp(row, C + m * N, (size_t)N * sizeof *row) == 0;
	}
	hash_bytes(C, (size_t)(M * N) * sizeof *C);
	double worst = 0.0;
	for (int64_t m = 0; m < M; m++)
		for (int64_t n = 0; n < N; n++) {
			double acc = 0.0, mag = 0.0;
			for (int64_t k = 0; k < K; k++) {
				double p = (double)A[m * K + k] * (double)B[k * N + n];
				acc += p;
				mag += fabs(p);
			}
			double c0 = (double)C0[m * N + n];
			double want = (double)alpha * acc + (double)beta * c0 + (double)bias[n];
			mag = fabs((double)alpha) * mag + fabs((double)beta * c0);
			want = want > 0.0 ? want : 0.0;
			double err = fabs((double)C[m * N + n] - want) - 1e-5 * mag - 1e-6;
			if (err > worst)
				worst = err;
		}
	char what[160];
	snprintf(what, sizeof what, "weight form %d M %lld N %lld K %lld alpha %g beta %g (K blocks of %lld)",
	         form, (long long)M, (long long)N, (long long)K, (double)alpha, (double)beta,
	         (long long)kiln_gemm_kc_n(K, N));
	CHECK(worst <= 0.0, what);
	size_t len = strlen(what);
	snprintf(what + len, sizeof what - len, ": each row alone, the same bits");
	CHECK(same, what);
	free(A), free(B), free(Bp), free(bias), free(Bh), free(C), free(C0), free(row);
}

static void weight_case(int64_t M, int64_t N, int64_t K, int form)
{
	weight_case_ab(M, N, K, form, 1.0f, 0.0f);
}

/* run_case over M = 5 to 32 (every row count of AVX-512's swapped path), each K
 * plain (the LM head's call) and with one of the epilogues in turn */
static void swap_cases(void)
{
	static const int64_t Ks[] = {1, 7, 37, 256, 257, 300, 511};
	static const struct {
		float alpha, beta;
		int act, pad;
	} forms[] = {
		{0.7f, 0.0f, NOEP, 0}, {1.0f, 0.3f, NOEP, 1}, {1.0f, 0.0f, KILN_ACT_NONE, 0},
		{1.0f, 0.0f, KILN_ACT_RELU, 1}, {-1.3f, 0.3f, KILN_ACT_GELU, 0},
		{1.0f, 0.0f, KILN_ACT_SIGMOID, 0}, {0.7f, 1.0f, KILN_ACT_TANH, 0},
		{1.0f, 0.3f, KILN_ACT_LEAKY_RELU, 0}, {1.0f, 0.0f, KILN_ACT_CLIP, 1},
	};
	int nf = (int)(sizeof forms / sizeof forms[0]), f = 0;
	for (int64_t M = 5; M <= 32; M++)
		for (size_t j = 0; j < sizeof Ks / sizeof Ks[0]; j++, f = (f + 1) % nf) {
			int64_t K = Ks[j], N = (M + (int64_t)j) % 2 ? 1000 : 67;
			if (M * K > 8192 && K != 511)
				continue;  /* the usual path (K = 511 keeps one such case per M) */
			run_case(M, N, K, 1, 0, 0, 1.0f, 0.0f, NOEP);
			run_case(M, N, K, 1, forms[f].pad, 0, forms[f].alpha, forms[f].beta, forms[f].act);
		}
}

static int child(void)
{
	static const int64_t Ns[] = {1, 7, 17, 33, 63, 67}, Ks[] = {1, 3, 5, 37, 255, 301};
	for (int64_t M = 1; M <= 5; M++)
		for (size_t i = 0; i < sizeof Ns / sizeof Ns[0]; i++)
			for (size_t j = 0; j < sizeof Ks / sizeof Ks[0]; j++) {
				int64_t N = Ns[i], K = Ks[j];
				run_case(M, N, K, 1, 0, 0, 1.0f, 0.0f, NOEP);
				run_case(M, N, K, 1, 1, 0, 0.5f, 0.3f, NOEP);
				run_case(M, N, K, 1, 0, 0, 1.0f, 1.0f, KILN_ACT_RELU);
				run_case(M, N, K, 1, 0, 1, 1.0f, 0.0f, NOEP);
				run_case(M, N, K, 1, 1, 1, 1.0f, 0.0f, KILN_ACT_RELU);
				run_case(M, N, K, 0, 0, 1, 1.0f, 0.0f, KILN_ACT_RELU);
			}
	/* float16 B in its natural layout at batch 1: whole blocks of 256
	 * columns (AVX-512's f16n_block256), with and without a remainder */
	static const int64_t Nw[] = {256, 300, 640}, Kw[] = {37, 301};
	for (size_t i = 0; i < sizeof Nw / sizeof Nw[0]; i++)
		for (size_t j = 0; j < sizeof Kw / sizeof Kw[0]; j++) {
			run_case(1, Nw[i], Kw[j], 0, 0, 1, 1.0f, 0.0f, KILN_ACT_RELU);
			run_case(1, Nw[i], Kw[j], 0, 0, 1, 0.5f, 0.25f, NOEP);
		}
	/* products on weights, narrow (N <= 64: shorter K blocks) and wide,
	 * K of one block, several narrow ones, and more than 256 rows; N = 5
	 * to 64 covers AVX2's batch-1 narrow blocks for 1 to 8 vectors of 8
	 * columns (f32-gemv/avx2.c narrow), 32, 64, 96 and 128 AVX-512's full
	 * last panels read without masks */
	static const int64_t Mq[] = {1, 3, 7, 16, 70},
	                     Nq[] = {5, 16, 17, 24, 32, 33, 48, 49, 64, 96, 100, 128},
	                     Kq[] = {9, 16, 17, 40, 64, 129, 300, 1100};
	for (size_t i = 0; i < sizeof Mq / sizeof Mq[0]; i++)
		for (size_t j = 0; j < sizeof Nq / sizeof Nq[0]; j++)
			for (size_t k = 0; k < sizeof Kq / sizeof Kq[0]; k++)
				for (int form = 0; form < 3; form++)
					if (form == 0 || Mq[i] <= 16)
						weight_case(Mq[i], Nq[j], Kq[k], form);
	/* AVX-512's batch-1 product takes four panels at a time where the
	 * packed weight fits 32 KiB (K 32 ceil(N / 32) floats <= 8192), two (or
	 * three) otherwise: 4 to 8 panels, full or narrow last, on both sides of
	 * the line (N = 128: K 64 and 65; N = 256: K 32 and 33) */
	static const int64_t Nl[] = {128, 160, 200, 224, 256}, Kl[] = {9, 32, 33, 40, 64, 65, 129};
	for (size_t j = 0; j < sizeof Nl / sizeof Nl[0]; j++)
		for (size_t k = 0; k < sizeof Kl / sizeof Kl[0]; k++)
			weight_case(3, Nl[j], Kl[k], 0);
	/* AVX-512's assembly tiles over a narrow layer's K blocks (5 to 12
	 * rows; 64 rows: 10-row tiles of 16 columns, 5-row tiles by 64) with
	 * + C (beta 1), and alpha or beta they leave to the intrinsics */
	static const int64_t Ma[] = {64, 70}, Na[] = {5, 16, 32, 64}, Ka[] = {16, 17, 64, 129};
	static const float ab[][2] = {{1.0f, 1.0f}, {0.5f, 0.0f}, {1.0f, 0.3f}};
	for (size_t i = 0; i < sizeof Ma / sizeof Ma[0]; i++)
		for (size_t j = 0; j < sizeof Na / sizeof Na[0]; j++)
			for (size_t k = 0; k < sizeof Ka / sizeof Ka[0]; k++)
				for (size_t q = 0; q < sizeof ab / sizeof ab[0]; q++)
					weight_case_ab(Ma[i], Na[j], Ka[k], 0, ab[q][0], ab[q][1]);
	weight_case(64, 5, 32, 0);
	weight_case(64, 16, 40, 0);
	swap_cases();
	printf("hash %016llx\n", (unsigned long long)hash);
	return harness_report();
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "child") == 0)
		return child();
	return isa_runs_same(argv[0]);
}

/*
 * test_attention.c - kiln_f32_attention (fused scaled dot-product attention)
 * against a double-precision reference: softmax_j(scale q.k_j + mask) . v.
 *
 * Shapes cover one query row and kv_len 1, counts that are not multiples of
 * the variants' tiles (query blocks of KILN_ATTENTION_ROWS, key tiles, 16
 * columns of V) and the transformer's own (64 rows, head_dim 16); layouts:
 * contiguous [batch, heads, rows, dim], the head split of [batch, rows,
 * heads * dim] (PyTorch's Reshape + Transpose, read as strides, with Y
 * merged back the same way), K transposed in memory (element stride != 1,
 * which the kernel packs) and V with a width that is not a multiple of 16.
 * Masks: none, one per query row and key ([q_len, kv_len] broadcast over
 * batch and heads), a padding mask per batch broadcast over heads and rows,
 * and a causal mask of -inf; a row of only -inf gives NaN, as Softmax does.
 * The work memory is exactly kiln_attention_work_floats floats, guarded, as
 * are the outputs; a second call must give the same bits.
 * Tolerance: |err| <= 3e-5 * bound, bound = sum_j p_j |v_jc| (1 + s), where
 * s = max_j (|scale| sum_d |q_d k_jd| + |mask_j|) (a score's rounding error
 * moves p_j by that much relatively); exp is f32-vmath/exp.h's 2^x of the scores
 * times log2 e in the SIMD variants (v_exp2_nonpos, 0.95 ulp, in AVX2 and
 * AVX-512 alike; tests/kernels/test_exp2.c).
 */
#include "kiln/kernels.h"

#include "harness.h"

static const double ATTN_TOL = 3e-5;

enum { LAYOUT_CONTIG, LAYOUT_SPLIT, LAYOUT_KT, LAYOUTS };
enum { MASK_NONE, MASK_ROWS, MASK_PAD, MASK_CAUSAL, MASK_DEAD_ROW, MASKS };
static const char *const layout_names[LAYOUTS] = {"contiguous", "head split", "K transposed"};
static const char *const mask_names[MASKS] = {"no mask", "[q,k] mask", "padding mask",
                                              "causal -inf", "a row of -inf"};

static void run_case(int64_t B, int64_t H, int64_t Sq, int64_t Sk, int64_t dh, int64_t dv,
                     int layout, int mask_kind)
{
	kiln_attention_params p = {B, H, Sq, Sk, dh, dv, 0.0f, {0}, {0}, {0}, {0}, {0}};
	p.scale = (float)(1.0 / sqrt((double)dh));
	int64_t nq = B * H * Sq * dh, nk = B * H * Sk * dh, nv = B * H * Sk * dv, ny = B * H * Sq * dv;
	if (layout == LAYOUT_CONTIG || layout == LAYOUT_KT) {
		int64_t q[4] = {H * Sq * dh, Sq * dh, dh, 1}, v[4] = {H * Sk * dv, Sk * dv, dv, 1};
		int64_t y[3] = {H * Sq * dv, Sq * dv, dv};
		memcpy(p.q_stride, q, sizeof q), memcpy(p.v_stride, v, sizeof v);
		memcpy(p.y_stride, y, sizeof y);
		int64_t k[4] = {H * Sk * dh, Sk * dh, dh, 1}, kt[4] = {H * Sk * dh, Sk * dh, 1, Sk};
		memcpy(p.k_stride, layout == LAYOUT_KT ? kt : k, sizeof k);
	} else {
		int64_t q[4] = {Sq * H * dh, dh, H * dh, 1}, k[4] = {Sk * H * dh, dh, H * dh, 1};
		int64_t v[4] = {Sk * H * dv, dv, H * dv, 1}, y[3] = {Sq * H * dv, dv, H * dv};
		memcpy(p.q_stride, q, sizeof q), memcpy(p.k_stride, k, sizeof k);
		memcpy(p.v_stride, v, sizeof v), memcpy(p.y_stride, y, sizeof y);
	}
	int64_t nm = 0;
	if (mask_kind == MASK_ROWS || mask_kind == MASK_CAUSAL || mask_kind == MASK_DEAD_ROW) {
		int64_t m[4] = {0, 0, Sk, 1};
		memcpy(p.mask_stride, m, sizeof m);
		nm = Sq * Sk;
	} else if (mask_kind == MASK_PAD) {
		int64_t m[4] = {Sk, 0, 0, 1};
		memcpy(p.mask_stride, m, sizeof m);
		nm = B * Sk;
	}
	float *Q = xmalloc((size_t)nq * sizeof *Q), *K = xmalloc((size_t)nk * sizeof *K);
	float *Vv = xmalloc((size_t)nv * sizeof *Vv), *M = xmalloc((size_t)(nm + 1) * sizeof *M);
	fill_uniform(Q, nq, -2.0f, 2.0f);
	fill_uniform(K, nk, -2.0f, 2.0f);
	fill_uniform(Vv, nv, -1.0f, 1.0f);
	fill_uniform(M, nm, -3.0f, 3.0f);
	if (mask_kind == MASK_CAUSAL || mask_kind == MASK_DEAD_ROW)
		for (int64_t i = 0; i < Sq; i++)
			for (int64_t j = 0; j < Sk; j++)
				if (j > i + (Sk - Sq) || (mask_kind == MASK_DEAD_ROW && i == Sq / 2))
					M[i * Sk + j] = -INFINITY;
	Guarded gy, gw;
	int64_t nw = kiln_attention_work_floats(dh, Sk, dv);
	float *Y = guarded_alloc(&gy, (size_t)ny * sizeof *Y, 4);
	float *work = guarded_alloc(&gw, (size_t)nw * sizeof *work, 0);
	double *want = xmalloc((size_t)ny * sizeof *want), *bound = xmalloc((size_t)ny * sizeof *bound);
	double *s = xmalloc((size_t)(Sk + 1) * sizeof *s), *sa = xmalloc((size_t)(Sk + 1) * sizeof *sa);
	for (int64_t b = 0; b < B; b++)
		for (int64_t h = 0; h < H; h++)
			for (int64_t i = 0; i < Sq; i++) {
				const int64_t *qs = p.q_stride, *ks = p.k_stride, *vs = p.v_stride,
				              *ms = p.mask_stride;
				double mx = -(double)INFINITY, sum = 0.0, big = 0.0;
				for (int64_t j = 0; j < Sk; j++) {
					double acc = 0.0, mag = 0.0;
					for (int64_t d = 0; d < dh; d++) {
						double t = (double)Q[b * qs[0] + h * qs[1] + i * qs[2] + d] *
						           (double)K[b * ks[0] + h * ks[1] + j * ks[2] + d * ks[3]];
						acc += t, mag += fabs(t);
					}
					double m = nm ? (double)M[b * ms[0] + h * ms[1] + i * ms[2] + j * ms[3]] : 0.0;
					s[j] = acc * (double)p.scale + m;
					sa[j] = mag * fabs((double)p.scale) + (isinf(m) ? 0.0 : fabs(m));
					mx = s[j] > mx ? s[j] : mx;
					big = sa[j] > big ? sa[j] : big;
				}
				for (int64_t j = 0; j < Sk; j++)
					s[j] = isinf(mx) ? (double)NAN : exp(s[j] - mx), sum += s[j];
				for (int64_t c = 0; c < dv; c++) {
					double acc = 0.0, mag = 0.0;
					for (int64_t j = 0; j < Sk; j++) {
						double v = (double)Vv[b * vs[0] + h * vs[1] + j * vs[2] + c];
						acc += s[j] * v, mag += s[j] * fabs(v);
					}
					int64_t at = b * p.y_stride[0] + h * p.y_stride[1] + i * p.y_stride[2] + c;
					want[at] = Sk ? acc / sum : 0.0;
					bound[at] = Sk ? mag / sum * (1.0 + big) : 1.0;
				}
			}
	char what[256];
	snprintf(what, sizeof what, "attention B %lld H %lld q %lld kv %lld dh %lld dv %lld, %s, %s",
	         (long long)B, (long long)H, (long long)Sq, (long long)Sk, (long long)dh,
	         (long long)dv, layout_names[layout], mask_names[mask_kind]);
	kiln_f32_attention(&p, Q, K, Vv, nm ? M : NULL, Y, work);
	CHECK_CLOSE(what, Y, want, bound, ny, ATTN_TOL);
	CHECK(guarded_intact(&gy) && guarded_intact(&gw), what);
	float *again = xmalloc((size_t)ny * sizeof *again);
	memcpy(again, Y, (size_t)ny * sizeof *Y);
	kiln_f32_attention(&p, Q, K, Vv, nm ? M : NULL, Y, work);
	CHECK(memcmp(again, Y, (size_t)ny * sizeof *Y) == 0, "the same bits on a second call");
	free(again), free(s), free(sa), free(want), free(bound);
	free(Q), free(K), free(Vv), free(M);
	guarded_free(&gy), guarded_free(&gw);
}

int main(void)
{
	static const int64_t shapes[][4] = {
		/* q_len, kv_len, head_dim, v_dim */
		{64, 64, 16, 16}, {1, 1, 4, 4},    {5, 7, 3, 5},    {33, 70, 17, 20},
		{32, 32, 64, 64}, {70, 100, 8, 48}, {16, 129, 32, 16}, {40, 9, 16, 33},
	};
	for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
		for (int layout = 0; layout < LAYOUTS; layout++)
			for (int mask = 0; mask < MASKS; mask++) {
				if (mask == MASK_CAUSAL && shapes[i][1] < shapes[i][0])
					continue;  /* a causal row needs its own key */
				run_case(2, 3, shapes[i][0], shapes[i][1], shapes[i][2], shapes[i][3], layout,
				         mask);
			}
	run_case(1, 2, 8, 0, 4, 4, LAYOUT_CONTIG, MASK_NONE);  /* no keys: zeros */
	return harness_report();
}

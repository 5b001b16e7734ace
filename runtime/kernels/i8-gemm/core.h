/*
 * i8-gemm/core.h - the blocked integer GEMM and convolution (i8gemm.h),
 * included by each variant file after it defines
 *   I8_MR                      rows of its micro-kernel
 *   i8_tile(mr, a, lda, panel, kp, c, acc)
 *                              c[r][0, 32) (+)= sum over kp pairs of rows
 *                              of a (r < mr <= I8_MR) times the panel
 *   i8_requant(e, sa, sab, bt, percol, sums, sd, r)
 *                              exact mode's requantization of 32 sums (the
 *                              int32 sums, or their exact doubles sd when
 *                              not NULL) into r (int32), as I8Exact says:
 *                              percol, sb and the bias term from e per
 *                              column, else sab (sa * sb) and bt for the row
 *   I8_GEMM_NAME, I8_CONV_NAME the entry points' names
 * so the packing loops are compiled (and vectorized) for the variant's
 * instructions too. Every sum is exact (i8gemm.h), so the order of the
 * blocks does not matter to the result.
 *
 * A 16-bit operand (exact mode only) minus its zero point, v in
 * [-65535, 65535], is split into two parts that fit the int16 pipeline:
 * v = 256 hi + lo with lo in [0, 255] and hi in [-256, 255]. Each pair of
 * parts (row part pa, column part pb) is one product of operands at most
 * 256 in magnitude (sums of K <= KILN_I8_MAX_K fit int32), and the sum is
 * sum over the pairs of 256^(pa + pb) times its product, below 2^48: exact
 * in double, which is what the requantization takes.
 */
#include <stddef.h>
#include <string.h>

#include "i8gemm.h"

/* K rounded up to whole pairs: the row stride of A' in work. */
static inline int64_t i8_kpad(int64_t K)
{
	return K + (K & 1);
}

/* v = 256 hi + lo, lo in [0, 255] (a 16-bit operand minus its zero point). */
static inline void i8_split(int32_t v, int16_t *lo, int16_t *hi)
{
	int32_t l = (int32_t)((uint32_t)v & 255u);  /* v mod 256 */
	*lo = (int16_t)l;
	*hi = (int16_t)((v - l) / 256);               /* exact */
}

/* Row m of the row operand minus its zero point, as int16, into dst
 * (K + 1 elements when K is odd: the pad is 0); a 16-bit operand as its
 * low parts into dst and its high parts into dst_hi. */
static void i8_convert_row(const kiln_q8_operand *A, int64_t m, int64_t lda, int64_t K,
                           int16_t *dst, int16_t *dst_hi)
{
	int32_t z = zero_at(A, m);
	if (A->wide) {
		for (int64_t k = 0; k < K; k++)
			i8_split(q_at(A->data, A->is_signed, 1, m * lda + k) - z, &dst[k], &dst_hi[k]);
		if (K & 1)
			dst[K] = dst_hi[K] = 0;
		return;
	}
	if (A->is_signed) {
		const int8_t *s = (const int8_t *)A->data + m * lda;
		for (int64_t k = 0; k < K; k++)
			dst[k] = (int16_t)(s[k] - z);
	} else {
		const uint8_t *s = (const uint8_t *)A->data + m * lda;
		for (int64_t k = 0; k < K; k++)
			dst[k] = (int16_t)(s[k] - z);
	}
	if (K & 1)
		dst[K] = 0;
}

/* Work memory (kiln_i8_work_bytes): A' (na parts of rows x kpad int16)
 * then the panel's sums (na * nb parts of rows x 32 int32), 64-byte
 * aligned. */
static void i8_work(void *work, int64_t rows, int64_t K, int na, int16_t **a, int32_t **c)
{
	uintptr_t p = ((uintptr_t)work + 63) & ~(uintptr_t)63;
	*a = (int16_t *)p;
	p += (uintptr_t)(na * rows * i8_kpad(K) * 2);
	p = (p + 63) & ~(uintptr_t)63;
	*c = (int32_t *)p;
}

/* The row operand A (M rows lda apart, K long) minus its zero points into
 * work as A' (i8_convert_row, two parts if A is 16-bit), and where the
 * panel's sums go. */
static void i8_prepare(const kiln_q8_operand *A, int64_t M, int64_t lda, int64_t K, void *work,
                       int16_t **a, int32_t **c)
{
	int64_t lda2 = i8_kpad(K);
	i8_work(work, M, K, A->wide ? 2 : 1, a, c);
	for (int64_t m = 0; m < M; m++)
		i8_convert_row(A, m, lda, K, *a + m * lda2, *a + (M + m) * lda2);
}

/* Two rows of 32 int32 (a 16-bit operand minus its zero point) split into
 * the pair layout of one k pair of the low panel and of the high panel. */
static inline void i8_interleave_split(const int32_t *r0, const int32_t *r1, int16_t *lo,
                                       int16_t *hi)
{
	for (int j = 0; j < I8_NR; j++) {
		i8_split(r0[j], &lo[2 * j], &hi[2 * j]);
		i8_split(r1[j], &lo[2 * j + 1], &hi[2 * j + 1]);
	}
}

/* The sums of parts c (na * nb of them, each rows x 32, part (pa, pb) at
 * pa * nb + pb) of row r, as exact doubles: sum of 256^(pa + pb) c. */
static void i8_combine(const int32_t *c, int np, int nb, int64_t rows, int64_t r, double *sd)
{
	for (int j = 0; j < I8_NR; j++)
		sd[j] = 0.0;
	for (int q = 0; q < np; q++) {
		double f = (q / nb + q % nb) == 0 ? 1.0 : (q / nb + q % nb) == 1 ? 256.0 : 65536.0;
		const int32_t *cq = c + (q * rows + r) * I8_NR;
		for (int j = 0; j < I8_NR; j++)
			sd[j] += f * (double)cq[j];
	}
}

/* Two rows of 32 int16 into the pair layout of one k pair. */
static inline void i8_interleave(const int16_t *r0, const int16_t *r1, int16_t *out)
{
	for (int j = 0; j < I8_NR; j++) {
		out[2 * j] = r0[j];
		out[2 * j + 1] = r1[j];
	}
}

/* Exact mode (kiln_q8_output.exact): the per-call constants of
 * store_exact (ref.c) into e; 0 for any other output. */
static int i8_exact_setup(const I8Out *o, I8Exact *e)
{
	const kiln_q8_output *Y = o->y8;
	if (!Y || !Y->exact)
		return 0;
	e->zy = (double)(Y->zero ? q_at(Y->zero, Y->is_signed, Y->wide, 0) : 0);
	e->sy = (double)Y->scale[0];
	e->lo = Y->is_signed ? (Y->wide ? -32768.0 : -128.0) : 0.0;
	e->hi = Y->is_signed ? (Y->wide ? 32767.0 : 127.0) : (Y->wide ? 65535.0 : 255.0);
	if (Y->relu && e->zy > e->lo)
		e->lo = e->zy < e->hi ? e->zy : e->hi;
	e->has_bias = Y->bias != NULL;
	return 1;
}

/* The bias term of output channel / column ch. */
static inline double i8_bias_term(const kiln_q8_output *Y, int64_t ch)
{
	return (double)Y->bias[ch] * (double)Y->bias_scale[ch * Y->bias_scale_stride];
}

/* r[0, w) (already requantized) into Y's elements [at, at + w). */
static void i8_store_narrow(const kiln_q8_output *Y, const int32_t *r, int64_t w, int64_t at)
{
	if (Y->wide && Y->is_signed)
		for (int64_t j = 0; j < w; j++)
			((int16_t *)Y->data)[at + j] = (int16_t)r[j];
	else if (Y->wide)
		for (int64_t j = 0; j < w; j++)
			((uint16_t *)Y->data)[at + j] = (uint16_t)r[j];
	else if (Y->is_signed)
		for (int64_t j = 0; j < w; j++)
			((int8_t *)Y->data)[at + j] = (int8_t)r[j];
	else
		for (int64_t j = 0; j < w; j++)
			((uint8_t *)Y->data)[at + j] = (uint8_t)r[j];
}

/* Every tile of rows [0, M) of A' (lda apart, from column k0) over the
 * panel of kp pairs, into c (rows 32 apart); acc: add to c. With parts
 * (na row parts apart by astep, nb panels apart by pstep), every pair of
 * parts into its part of c (M x 32 apart). */
static void i8_tiles(const int16_t *a, int64_t lda, int64_t M, const int16_t *panel, int64_t kp,
                     int32_t *c, int acc, int na, int64_t astep, int nb, int64_t pstep)
{
	for (int pa = 0; pa < na; pa++)
		for (int pb = 0; pb < nb; pb++) {
			int32_t *cq = c + (pa * nb + pb) * M * I8_NR;
			for (int64_t m = 0; m < M; m += I8_MR) {
				int mr = M - m < I8_MR ? (int)(M - m) : I8_MR;
				i8_tile(mr, a + pa * astep + m * lda, lda, panel + pb * pstep, kp,
				        cq + m * I8_NR, acc);
			}
		}
}

/* ---- GEMM ---- */

/* Row k of B minus the columns' zero points zb, columns [n0, n0 + w), as
 * int16; 0 past w (and for k >= K). */
static inline void i8_b_row(const kiln_q8_operand *B, int64_t k, int64_t K, int64_t ldb,
                            int64_t n0, int64_t w, const int16_t *zb, int16_t *out)
{
	int64_t j = 0;
	if (k < K) {
		if (B->is_signed) {
			const int8_t *s = (const int8_t *)B->data + k * ldb + n0;
			for (; j < w; j++)
				out[j] = (int16_t)(s[j] - zb[j]);
		} else {
			const uint8_t *s = (const uint8_t *)B->data + k * ldb + n0;
			for (; j < w; j++)
				out[j] = (int16_t)(s[j] - zb[j]);
		}
	}
	for (; j < I8_NR; j++)
		out[j] = 0;
}

/* The same for a 16-bit B: int32 values, 0 past w and for k >= K. */
static void i8_b_row_wide(const kiln_q8_operand *B, int64_t k, int64_t K, int64_t ldb,
                          int64_t n0, int64_t w, const int32_t *zb, int32_t *out)
{
	for (int64_t j = 0; j < I8_NR; j++)
		out[j] = k < K && j < w ? q_at(B->data, B->is_signed, 1, k * ldb + n0 + j) - zb[j] : 0;
}

/* B's scales and bias terms of columns [n0, n0 + w) into e (exact mode). */
static void i8_gemm_scales(const I8Gemm *g, I8Exact *e, int64_t n0, int64_t w)
{
	for (int64_t j = 0; j < I8_NR; j++) {
		e->sbv[j] = j < w ? (double)scale_at(g->B, n0 + j) : 0.0;
		e->btv[j] = j < w && e->has_bias ? i8_bias_term(g->out->y8, n0 + j) : 0.0;
	}
}

/* The panel's sums c (np parts, i8_combine) of every row, columns
 * [n0, n0 + w), into the output: requantized with e in exact mode, else
 * through kiln_i8_store_row. */
static void i8_gemm_store(const I8Gemm *g, const I8Exact *e, int exact, int64_t n0, int64_t w,
                          const int32_t *c, int np, int nb)
{
	int32_t r[I8_NR];
	double sd[I8_NR];
	for (int64_t m = 0; m < g->M; m++) {
		if (!exact) {
			kiln_i8_store_row(g->out, m, n0, w, c + m * I8_NR, m * g->ldy + n0);
			continue;
		}
		if (np > 1)
			i8_combine(c, np, nb, g->M, m, sd);
		i8_requant(e, (double)scale_at(g->A, m), 0.0, 0.0, 1, c + m * I8_NR,
		           np > 1 ? sd : NULL, r);
		i8_store_narrow(g->out->y8, r, w, m * g->ldy + n0);
	}
}

#ifdef I8_VNNI
static inline int i8v_fits(int64_t K);
static void i8v_gemm(const I8Gemm *g, void *work);
#endif

void I8_GEMM_NAME(const I8Gemm *g, void *work)
{
#ifdef I8_VNNI
	if (!g->A->wide && !g->B->wide && i8v_fits(g->K)) {
		i8v_gemm(g, work);
		return;
	}
#endif
	int64_t M = g->M, N = g->N, K = g->K, lda2 = i8_kpad(K);
	int na = g->A->wide ? 2 : 1, nb = g->B->wide ? 2 : 1, np = na * nb;
	int64_t kc = I8_KC / nb, pstep = kc * I8_NR;
	int16_t *a;
	int32_t *c;
	i8_prepare(g->A, M, g->lda, K, work, &a, &c);
	_Alignas(64) int16_t panel[I8_KC * I8_NR];
	int16_t r0[I8_NR], r1[I8_NR], zb[I8_NR];
	int32_t w0[I8_NR], w1[I8_NR], zb32[I8_NR];
	_Alignas(64) I8Exact e;
	int exact = i8_exact_setup(g->out, &e);
	for (int64_t n0 = 0; n0 < N; n0 += I8_NR) {
		int64_t w = N - n0 < I8_NR ? N - n0 : I8_NR;
		for (int64_t j = 0; j < w; j++) {
			zb32[j] = zero_at(g->B, n0 + j);
			zb[j] = (int16_t)(nb == 1 ? zb32[j] : 0);
		}
		if (exact)
			i8_gemm_scales(g, &e, n0, w);
		int64_t k0 = 0;
		do {
			int64_t kb = K - k0 < kc ? K - k0 : kc, kp = (kb + 1) / 2;
			for (int64_t p = 0; p < kp; p++) {
				int16_t *o = panel + p * 2 * I8_NR;
				if (nb == 2) {
					i8_b_row_wide(g->B, k0 + 2 * p, K, g->ldb, n0, w, zb32, w0);
					i8_b_row_wide(g->B, k0 + 2 * p + 1, K, g->ldb, n0, w, zb32, w1);
					i8_interleave_split(w0, w1, o, o + pstep);
					continue;
				}
				i8_b_row(g->B, k0 + 2 * p, K, g->ldb, n0, w, zb, r0);
				i8_b_row(g->B, k0 + 2 * p + 1, K, g->ldb, n0, w, zb, r1);
				i8_interleave(r0, r1, o);
			}
			i8_tiles(a + k0, lda2, M, panel, kp, c, k0 > 0, na, M * lda2, nb, pstep);
			k0 += kb;
		} while (k0 < K);
		i8_gemm_store(g, &e, exact, n0, w, c, np, nb);
	}
}

/* ---- convolution (implicit im2col) ---- */

/* A run of the panel's columns: len outputs along the last axis, from
 * output (o0, o1, o2) on, at column j of the panel. */
typedef struct I8Run {
	int64_t j, len, o[3];
} I8Run;

/* out[u] = X[row + i + u * step] - zx where 0 <= i + u * step < n, else 0,
 * for u < len; X's signedness a constant after inlining. */
static inline void i8_x_run(int16_t *out, const void *row, int sgn, int64_t i, int64_t step,
                            int64_t n, int64_t len, int32_t zx)
{
	if (step == 1) {
		int64_t lo = i >= 0 ? 0 : -i, hi = n - i;
		lo = lo < len ? lo : len;
		hi = hi < lo ? lo : hi > len ? len : hi;
		for (int64_t u = 0; u < lo; u++)
			out[u] = 0;
		if (sgn) {
			const int8_t *s = row;
			for (int64_t u = lo; u < hi; u++)
				out[u] = (int16_t)(s[i + u] - zx);
		} else {
			const uint8_t *s = row;
			for (int64_t u = lo; u < hi; u++)
				out[u] = (int16_t)(s[i + u] - zx);
		}
		for (int64_t u = hi; u < len; u++)
			out[u] = 0;
		return;
	}
	for (int64_t u = 0; u < len; u++, i += step)
		out[u] = (int16_t)(i >= 0 && i < n ? q8_at(row, sgn, i) - zx : 0);
}

/* Row k of the im2col matrix: its channel's offset in the group's planes
 * and its tap's offsets along the three axes (dilated). */
typedef struct I8Tap {
	int64_t plane, d[3];
} I8Tap;

/* The taps of rows [k0, k0 + kb) into tap, counted up without divisions
 * past the first. */
static void i8_taps(const kiln_window3d_params *p, int64_t k0, int64_t kb, I8Tap *tap)
{
	const int64_t *kd = p->kernel;
	int64_t kvol = kd[0] * kd[1] * kd[2], plane = p->in[0] * p->in[1] * p->in[2];
	int64_t c = k0 / kvol, t = k0 % kvol;
	int64_t t0 = t / (kd[1] * kd[2]), t1 = t / kd[2] % kd[1], t2 = t % kd[2];
	for (int64_t k = 0; k < kb; k++) {
		tap[k] = (I8Tap){c * plane, {t0 * p->dilation[0], t1 * p->dilation[1],
		                             t2 * p->dilation[2]}};
		if (++t2 == kd[2]) {
			t2 = 0;
			if (++t1 == kd[1]) {
				t1 = 0;
				if (++t0 == kd[0])
					t0 = 0, c++;
			}
		}
	}
}

/* A row of the im2col matrix of the group's planes xg at tap (NULL: past
 * K), the panel's runs (whose input starts, before the tap, are in at), as
 * int16 minus zx; 0 in the padding. Columns past the runs are not written. */
static void i8_im2col_row(const kiln_window3d_params *p, const kiln_q8_operand *X,
                          const void *xg, const I8Tap *tap, const I8Run *runs,
                          const int64_t (*at)[3], int nruns, int32_t zx, int16_t *out)
{
	const int64_t *in = p->in;
	for (int r = 0; r < nruns; r++) {
		const I8Run *u = &runs[r];
		int64_t i0 = tap ? at[r][0] + tap->d[0] : -1, i1 = tap ? at[r][1] + tap->d[1] : -1;
		if (i0 < 0 || i0 >= in[0] || i1 < 0 || i1 >= in[1]) {
			memset(out + u->j, 0, (size_t)u->len * sizeof *out);
			continue;
		}
		const unsigned char *row = (const unsigned char *)xg + tap->plane +
		                           (i0 * in[1] + i1) * in[2]; /* 1-byte elements */
		int64_t i2 = at[r][2] + tap->d[2];
		if (X->is_signed)
			i8_x_run(out + u->j, row, 1, i2, p->stride[2], in[2], u->len, zx);
		else
			i8_x_run(out + u->j, row, 0, i2, p->stride[2], in[2], u->len, zx);
	}
}

/* The same for a 16-bit X (elements from xe, an element index): int32
 * values, 0 in the padding and for tap NULL. */
static void i8_im2col_row_wide(const kiln_window3d_params *p, const kiln_q8_operand *X,
                               int64_t xe, const I8Tap *tap, const I8Run *runs,
                               const int64_t (*at)[3], int nruns, int32_t zx, int32_t *out)
{
	const int64_t *in = p->in, st = p->stride[2];
	for (int r = 0; r < nruns; r++) {
		const I8Run *u = &runs[r];
		int32_t *o = out + u->j;
		int64_t i0 = tap ? at[r][0] + tap->d[0] : -1, i1 = tap ? at[r][1] + tap->d[1] : -1;
		if (i0 < 0 || i0 >= in[0] || i1 < 0 || i1 >= in[1]) {
			memset(o, 0, (size_t)u->len * sizeof *o);
			continue;
		}
		int64_t row = xe + tap->plane + (i0 * in[1] + i1) * in[2], i = at[r][2] + tap->d[2];
		/* outputs v with 0 <= i + v * st < in[2]: [lo, hi) */
		int64_t lo = i >= 0 ? 0 : (-i + st - 1) / st, hi = in[2] - i <= 0 ? 0 : (in[2] - i - 1) / st + 1;
		lo = lo < u->len ? lo : u->len;
		hi = hi < lo ? lo : hi > u->len ? u->len : hi;
		for (int64_t v = 0; v < lo; v++)
			o[v] = 0;
		if (X->is_signed) {
			const int16_t *s = (const int16_t *)X->data + row;
			for (int64_t v = lo; v < hi; v++)
				o[v] = s[i + v * st] - zx;
		} else {
			const uint16_t *s = (const uint16_t *)X->data + row;
			for (int64_t v = lo; v < hi; v++)
				o[v] = s[i + v * st] - zx;
		}
		for (int64_t v = hi; v < u->len; v++)
			o[v] = 0;
	}
}

/* The runs of output columns [n0, n0 + w), and where each one's inputs
 * start along the three axes (before the taps) into at. */
static int i8_runs(const kiln_window3d_params *p, int64_t n0, int64_t w, I8Run *runs,
                   int64_t (*at)[3])
{
	int nr = 0;
	for (int64_t j = 0; j < w;) {
		int64_t o = n0 + j, o2 = o % p->out[2], o1 = o / p->out[2] % p->out[1];
		int64_t o0 = o / (p->out[1] * p->out[2]);
		int64_t len = p->out[2] - o2 < w - j ? p->out[2] - o2 : w - j;
		runs[nr++] = (I8Run){.j = j, .len = len, .o = {o0, o1, o2}};
		j += len;
	}
	for (int r = 0; r < nr; r++)
		for (int ax = 0; ax < 3; ax++)
			at[r][ax] = runs[r].o[ax] * p->stride[ax] - p->pad_begin[ax];
	return nr;
}

/* The panel's sums c (np parts) of group g's output channels, outputs
 * [n0, n0 + w) of batch item n, into the output (as i8_gemm_store). */
static void i8_conv_store(const I8Conv *cv, const I8Exact *e, int exact, int64_t n, int64_t g,
                          int64_t n0, int64_t w, const int32_t *c, int np, int nb)
{
	const kiln_window3d_params *p = cv->p;
	int64_t M = p->out_channels, mg = M / p->group, ovol = p->out[0] * p->out[1] * p->out[2];
	int32_t res[I8_NR];
	double sd[I8_NR];
	for (int64_t r = 0; r < mg; r++) {
		int64_t m = g * mg + r, o = (n * M + m) * ovol + n0;
		if (!exact) {
			kiln_i8_store_row(cv->out, m, n0, w, c + r * I8_NR, o);
			continue;
		}
		/* as store_exact(Y, o, sum, sx, sw[m], m) */
		double sab = (double)scale_at(cv->X, 0) * (double)scale_at(cv->W, m);
		double bt = e->has_bias ? i8_bias_term(cv->out->y8, m) : 0.0;
		if (np > 1)
			i8_combine(c, np, nb, mg, r, sd);
		i8_requant(e, 0.0, sab, bt, 0, c + r * I8_NR, np > 1 ? sd : NULL, res);
		i8_store_narrow(cv->out->y8, res, w, o);
	}
}

#ifdef I8_VNNI
static void i8v_conv(const I8Conv *cv, void *work);
#endif

void I8_CONV_NAME(const I8Conv *cv, void *work)
{
#ifdef I8_VNNI
	if (!cv->X->wide && !cv->W->wide &&
	    i8v_fits(cv->p->channels / cv->p->group * cv->p->kernel[0] * cv->p->kernel[1] *
	             cv->p->kernel[2])) {
		i8v_conv(cv, work);
		return;
	}
#endif
	const kiln_window3d_params *p = cv->p;
	int64_t M = p->out_channels, cg = p->channels / p->group, mg = M / p->group;
	int64_t K = cg * p->kernel[0] * p->kernel[1] * p->kernel[2], lda2 = i8_kpad(K);
	int64_t ovol = p->out[0] * p->out[1] * p->out[2], plane = p->in[0] * p->in[1] * p->in[2];
	int na = cv->W->wide ? 2 : 1, nb = cv->X->wide ? 2 : 1, np = na * nb;
	int64_t kc = I8_KC / nb, pstep = kc * I8_NR;
	int16_t *a;
	int32_t *c;
	i8_prepare(cv->W, M, K, K, work, &a, &c);
	int32_t zx = zero_at(cv->X, 0);
	_Alignas(64) int16_t panel[I8_KC * I8_NR];
	int16_t r0[I8_NR], r1[I8_NR];
	int32_t w0[I8_NR], w1[I8_NR];
	I8Run runs[I8_NR];
	int64_t at[I8_NR][3];
	I8Tap tap[I8_KC];
	int64_t tap_k0 = -1;  /* the first row of tap */
	_Alignas(64) I8Exact e;
	int exact = i8_exact_setup(cv->out, &e);
	for (int64_t n = 0; n < p->batch; n++)
		for (int64_t g = 0; g < p->group; g++) {
			int64_t xe = (n * p->channels + g * cg) * plane;  /* elements */
			const unsigned char *xg = (const unsigned char *)cv->X->data + xe * nb;
			for (int64_t n0 = 0; n0 < ovol; n0 += I8_NR) {
				int64_t w = ovol - n0 < I8_NR ? ovol - n0 : I8_NR;
				int nruns = i8_runs(p, n0, w, runs, at);
				for (int64_t j = w; j < I8_NR; j++)
					r0[j] = r1[j] = 0, w0[j] = w1[j] = 0;
				int64_t k0 = 0;
				do {
					int64_t kb = K - k0 < kc ? K - k0 : kc, kp = (kb + 1) / 2;
					if (tap_k0 != k0)
						i8_taps(p, k0, kb, tap);
					tap_k0 = k0;
					for (int64_t q = 0; q < kp; q++) {
						const I8Tap *t1 = 2 * q + 1 < kb ? &tap[2 * q + 1] : NULL;
						int16_t *o = panel + q * 2 * I8_NR;
						if (nb == 2) {
							i8_im2col_row_wide(p, cv->X, xe, &tap[2 * q], runs, at, nruns, zx, w0);
							i8_im2col_row_wide(p, cv->X, xe, t1, runs, at, nruns, zx, w1);
							i8_interleave_split(w0, w1, o, o + pstep);
							continue;
						}
						i8_im2col_row(p, cv->X, xg, &tap[2 * q], runs, at, nruns, zx, r0);
						i8_im2col_row(p, cv->X, xg, t1, runs, at, nruns, zx, r1);
						i8_interleave(r0, r1, o);
					}
					i8_tiles(a + g * mg * lda2 + k0, lda2, mg, panel, kp, c, k0 > 0, na,
					         M * lda2, nb, pstep);
					k0 += kb;
				} while (k0 < K);
				i8_conv_store(cv, &e, exact, n, g, n0, w, c, np, nb);
			}
		}
}

#ifdef I8_VNNI
/* ---- two 8-bit operands with VNNI (vpdpbusd) ----
 *
 * vpdpbusd adds to each int32 lane the four products of unsigned bytes of
 * one operand and signed bytes of the other, exactly (no saturation). The
 * row operand's bytes are used as they are: unsigned ones are the u8 side
 * and the panel is made s8, signed ones the s8 side and the panel u8; the
 * panel's bytes change signedness (xor 0x80, the zero point moving by 128
 * with them) only when the column operand has the row's signedness. With
 * raw operands a (row, zero point za) and b (column, zb),
 *   sum (a - za)(b - zb) = sum ab - zb sum a - za sum b + K za zb,
 * the row sums of a taken once per call, the column sums of b (needed only
 * when some za is not 0) while packing. Each term is computed in wrapping
 * 32-bit arithmetic; the result is exact because the true sum fits int32
 * (i8gemm.h), so it is the same as the pairs path's and the reference's.
 *
 * A' (rows rounded up to whole quads of k, 0 past K) and its row sums are
 * in work (i8v_fits); the panel holds 32
 * columns by at most I8V_KC rows (i8v_quad), element (k, j) at
 * [(k / 4) * 128 + 4 j + k % 4]: one 32-bit lane holds rows k to k + 3 of
 * column j. Rows past K are 0 in A' and in the panel, so they add nothing
 * to any of the three sums. */

enum { I8V_KC = 1024 };  /* rows of a byte panel (32 KiB) */

typedef struct I8V {
	uint8_t *a;        /* A', rows lda bytes apart */
	int64_t lda;
	int32_t *ra, *c;   /* A's row sums; the panel's sums (rows x 32) */
	int row_u8;        /* the rows are vpdpbusd's unsigned operand */
	uint8_t flip;      /* 0x80: the column operand's bytes change signedness */
	int32_t zshift;    /* what the flip adds to the column operand's zero points */
	int need_cb;       /* some row zero point is not 0: the column sums count */
} I8V;

/* The path fits the pairs path's work memory (kiln_i8_work_bytes: 128 +
 * M * 2 * kpad + M * 128 bytes, kpad K rounded up to even), so that code
 * compiled against it stays valid: at most 63 + M * (lda + 4) + 63 +
 * M * 128 bytes, with lda K rounded up to a multiple of 4; lda + 4 <=
 * 2 * kpad for K >= 3. Smaller K take the pairs. */
static inline int i8v_fits(int64_t K)
{
	return K >= 3;
}

/* The value of a byte of A' or of the panel, signed or not. */
static inline int32_t i8v_val(uint8_t b, int sgn)
{
	return sgn ? (int32_t)(b ^ 0x80) - 128 : (int32_t)b;
}

/* The sum of the n bytes of d (n a multiple of 4), signed or not: vpsadbw
 * against 0 sums 8 unsigned bytes into a 64-bit lane; a signed byte b is
 * (b ^ 0x80) - 128. */
static int32_t i8v_rowsum(const uint8_t *d, int64_t n, int sgn)
{
	const __m256i f = _mm256_set1_epi8(sgn ? (char)0x80 : 0), zero = _mm256_setzero_si256();
	__m256i acc = zero;
	int64_t k = 0;
	for (; k + 32 <= n; k += 32)
		acc = _mm256_add_epi64(acc, _mm256_sad_epu8(_mm256_xor_si256(
		                                _mm256_loadu_si256((const __m256i *)(d + k)), f), zero));
	int64_t lanes[4];
	_mm256_storeu_si256((__m256i *)lanes, acc);
	int64_t sum = lanes[0] + lanes[1] + lanes[2] + lanes[3] - (sgn ? 128 * k : 0);
	for (; k < n; k++)
		sum += i8v_val(d[k], sgn);
	return (int32_t)sum;
}

/* A (M rows lda apart, K long) into work as A', its row sums, and how the
 * column operand B goes into panels. */
static void i8v_prepare(const kiln_q8_operand *A, int64_t M, int64_t lda, int64_t K,
                        const kiln_q8_operand *B, void *work, I8V *v)
{
	uintptr_t p = ((uintptr_t)work + 63) & ~(uintptr_t)63;
	v->lda = (K + 3) & ~(int64_t)3;
	v->a = (uint8_t *)p;
	p += (uintptr_t)(M * v->lda);  /* a multiple of 4 */
	v->ra = (int32_t *)p;
	p = (p + (uintptr_t)M * 4 + 63) & ~(uintptr_t)63;
	v->c = (int32_t *)p;
	v->row_u8 = !A->is_signed;
	v->flip = B->is_signed == v->row_u8 ? 0 : 0x80;
	v->zshift = !v->flip ? 0 : B->is_signed ? 128 : -128;
	v->need_cb = 0;
	for (int64_t m = 0; m < M; m++) {
		uint8_t *d = v->a + m * v->lda;
		memcpy(d, (const uint8_t *)A->data + m * lda, (size_t)K);
		memset(d + K, 0, (size_t)(v->lda - K));
		v->ra[m] = i8v_rowsum(d, v->lda, A->is_signed);
		v->need_cb |= zero_at(A, m) != 0;
	}
}

/* The raw sums c[0, 32) of a row into the sums of the operands minus
 * their zero points (za the row's, zb the columns' as the panel holds
 * them, ra the row's sum, cb the columns'). */
static void i8v_correct(int32_t *c, int32_t ra, int32_t za, const int32_t *zb, const int32_t *cb,
                        int64_t K)
{
	/* vpmulld and vpsubd wrap, as the uint32 arithmetic this stands for */
	const __m256i vra = _mm256_set1_epi32(ra), vza = _mm256_set1_epi32(za);
	const __m256i kza = _mm256_set1_epi32(i8_wrap32((uint32_t)K * (uint32_t)za));
	for (int j = 0; j < I8_NR; j += 8) {
		__m256i z = _mm256_loadu_si256((const __m256i *)(zb + j));
		__m256i v = _mm256_loadu_si256((const __m256i *)(c + j));
		v = _mm256_sub_epi32(v, _mm256_mullo_epi32(z, _mm256_sub_epi32(vra, kza)));
		v = _mm256_sub_epi32(v, _mm256_mullo_epi32(vza, _mm256_loadu_si256((const __m256i *)(cb + j))));
		_mm256_storeu_si256((__m256i *)(c + j), v);
	}
}

/* Every tile of A' rows [0, M) (from column k0) over the panel of kq
 * quads into c; acc: add to c. */
static void i8v_tiles(const I8V *v, int64_t row0, int64_t M, int64_t k0, const uint8_t *panel,
                      int64_t kq, int acc)
{
	for (int64_t m = 0; m < M; m += I8V_MR) {
		int mr = M - m < I8V_MR ? (int)(M - m) : I8V_MR;
		i8v_tile(mr, v->row_u8, v->a + (row0 + m) * v->lda + k0, v->lda, panel, kq,
		         v->c + m * I8_NR, acc);
	}
}

/* Four rows of 32 bytes (NULL: a row past K, all 0) xor flip into one
 * quad of the panel: out[4 j + r] = rows[r][j]. */
static inline void i8v_quad(const uint8_t *const rows[4], uint8_t flip, uint8_t *out)
{
	const __m256i f = _mm256_set1_epi8((char)flip);
	__m256i x[4];
	for (int r = 0; r < 4; r++)
		x[r] = rows[r] ? _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)rows[r]), f)
		               : _mm256_setzero_si256();
	__m256i ab0 = _mm256_unpacklo_epi8(x[0], x[1]), ab1 = _mm256_unpackhi_epi8(x[0], x[1]);
	__m256i cd0 = _mm256_unpacklo_epi8(x[2], x[3]), cd1 = _mm256_unpackhi_epi8(x[2], x[3]);
	/* q0: columns 0-3 | 16-19, q1: 4-7 | 20-23, q2: 8-11 | 24-27, q3: 12-15 | 28-31 */
	__m256i q0 = _mm256_unpacklo_epi16(ab0, cd0), q1 = _mm256_unpackhi_epi16(ab0, cd0);
	__m256i q2 = _mm256_unpacklo_epi16(ab1, cd1), q3 = _mm256_unpackhi_epi16(ab1, cd1);
	_mm256_store_si256((__m256i *)out, _mm256_permute2x128_si256(q0, q1, 0x20));
	_mm256_store_si256((__m256i *)(out + 32), _mm256_permute2x128_si256(q2, q3, 0x20));
	_mm256_store_si256((__m256i *)(out + 64), _mm256_permute2x128_si256(q0, q1, 0x31));
	_mm256_store_si256((__m256i *)(out + 96), _mm256_permute2x128_si256(q2, q3, 0x31));
}

/* Rows [k0, k0 + kb) of B, columns [n0, n0 + w), into the panel (xor
 * flip); 0 past kb to the end of the last quad (columns past w are not
 * stored, whatever they hold). */
static void i8v_pack_b(const kiln_q8_operand *B, int64_t k0, int64_t kb, int64_t ldb, int64_t n0,
                       int64_t w, uint8_t flip, uint8_t *panel)
{
	_Alignas(32) uint8_t tmp[4][I8_NR];
	memset(tmp, 0, sizeof tmp);
	for (int64_t k = 0; k < kb; k += 4) {
		const uint8_t *rows[4];
		for (int r = 0; r < 4; r++) {
			rows[r] = NULL;
			if (k + r >= kb)
				continue;
			const uint8_t *s = (const uint8_t *)B->data + (k0 + k + r) * ldb + n0;
			rows[r] = w == I8_NR ? s : memcpy(tmp[r], s, (size_t)w);
		}
		i8v_quad(rows, flip, panel + k * I8_NR);
	}
}

static void i8v_gemm(const I8Gemm *g, void *work)
{
	int64_t M = g->M, N = g->N, K = g->K;
	I8V v;
	i8v_prepare(g->A, M, g->lda, K, g->B, work, &v);
	_Alignas(64) uint8_t panel[I8V_KC * I8_NR];
	_Alignas(64) I8Exact e;
	int exact = i8_exact_setup(g->out, &e);
	int32_t zb[I8_NR], cb[I8_NR];
	for (int64_t n0 = 0; n0 < N; n0 += I8_NR) {
		int64_t w = N - n0 < I8_NR ? N - n0 : I8_NR;
		for (int64_t j = 0; j < I8_NR; j++) {
			zb[j] = j < w ? zero_at(g->B, n0 + j) + v.zshift : 0;
			cb[j] = 0;
		}
		if (exact)
			i8_gemm_scales(g, &e, n0, w);
		int64_t k0 = 0;
		do {
			int64_t kb = K - k0 < I8V_KC ? K - k0 : I8V_KC, kq = (kb + 3) / 4;
			i8v_pack_b(g->B, k0, kb, g->ldb, n0, w, v.flip, panel);
			if (v.need_cb)
				i8v_colsums(panel, kq, v.row_u8, cb);
			i8v_tiles(&v, 0, M, k0, panel, kq, k0 > 0);
			k0 += kb;
		} while (k0 < K);
		for (int64_t m = 0; m < M; m++)
			i8v_correct(v.c + m * I8_NR, v.ra[m], zero_at(g->A, m), zb, cb, K);
		i8_gemm_store(g, &e, exact, n0, w, v.c, 1, 1);
	}
}

/* A row of the im2col matrix (i8_im2col_row) as raw bytes, pad in the
 * padding and past the runs. */
static void i8v_im2col_row(const kiln_window3d_params *p, const uint8_t *xg, const I8Tap *tap,
                           const I8Run *runs, const int64_t (*at)[3], int nruns, uint8_t pad,
                           uint8_t *out)
{
	const int64_t *in = p->in, st = p->stride[2];
	memset(out, pad, I8_NR);
	for (int r = 0; r < nruns; r++) {
		const I8Run *u = &runs[r];
		int64_t i0 = at[r][0] + tap->d[0], i1 = at[r][1] + tap->d[1], i = at[r][2] + tap->d[2];
		if (i0 < 0 || i0 >= in[0] || i1 < 0 || i1 >= in[1])
			continue;
		const uint8_t *row = xg + tap->plane + (i0 * in[1] + i1) * in[2];
		/* outputs t with 0 <= i + t * st < in[2]: [lo, hi) */
		int64_t lo = i >= 0 ? 0 : (-i + st - 1) / st, hi = in[2] - i <= 0 ? 0 : (in[2] - i - 1) / st + 1;
		lo = lo < u->len ? lo : u->len;
		hi = hi < lo ? lo : hi > u->len ? u->len : hi;
		if (st == 1) {
			i8v_copy(out + u->j + lo, row + i + lo, hi - lo);
			continue;
		}
		for (int64_t t = lo; t < hi; t++)
			out[u->j + t] = row[i + t * st];
	}
}

static void i8v_conv(const I8Conv *cv, void *work)
{
	const kiln_window3d_params *p = cv->p;
	int64_t M = p->out_channels, cg = p->channels / p->group, mg = M / p->group;
	int64_t K = cg * p->kernel[0] * p->kernel[1] * p->kernel[2];
	int64_t ovol = p->out[0] * p->out[1] * p->out[2], plane = p->in[0] * p->in[1] * p->in[2];
	I8V v;
	i8v_prepare(cv->W, M, K, K, cv->X, work, &v);
	int32_t zx = zero_at(cv->X, 0) + v.zshift;  /* in the panel's signedness */
	uint8_t pad = (uint8_t)((uint32_t)zero_at(cv->X, 0) & 255u);  /* X's raw byte */
	_Alignas(32) uint8_t tmp[4][I8_NR];
	memset(tmp, 0, sizeof tmp);
	_Alignas(64) uint8_t panel[I8V_KC * I8_NR];
	I8Run runs[I8_NR];
	int64_t at[I8_NR][3];
	I8Tap tap[I8V_KC];
	int64_t tap_k0 = -1;
	_Alignas(64) I8Exact e;
	int exact = i8_exact_setup(cv->out, &e);
	int32_t zb[I8_NR], cb[I8_NR];
	for (int j = 0; j < I8_NR; j++)
		zb[j] = zx;
	for (int64_t n = 0; n < p->batch; n++)
		for (int64_t g = 0; g < p->group; g++) {
			const uint8_t *xg = (const uint8_t *)cv->X->data + (n * p->channels + g * cg) * plane;
			for (int64_t n0 = 0; n0 < ovol; n0 += I8_NR) {
				int64_t w = ovol - n0 < I8_NR ? ovol - n0 : I8_NR;
				int nruns = i8_runs(p, n0, w, runs, at);
				memset(cb, 0, sizeof cb);
				int64_t k0 = 0;
				do {
					int64_t kb = K - k0 < I8V_KC ? K - k0 : I8V_KC, kq = (kb + 3) / 4;
					if (tap_k0 != k0)
						i8_taps(p, k0, kb, tap);
					tap_k0 = k0;
					for (int64_t k = 0; k < kb; k += 4) {
						const uint8_t *rows[4];
						for (int r = 0; r < 4; r++) {
							rows[r] = k + r < kb ? tmp[r] : NULL;
							if (rows[r])
								i8v_im2col_row(p, xg, &tap[k + r], runs, at, nruns, pad, tmp[r]);
						}
						i8v_quad(rows, v.flip, panel + k * I8_NR);
					}
					if (v.need_cb)
						i8v_colsums(panel, kq, v.row_u8, cb);
					i8v_tiles(&v, g * mg, mg, k0, panel, kq, k0 > 0);
					k0 += kb;
				} while (k0 < K);
				for (int64_t r = 0; r < mg; r++)
					i8v_correct(v.c + r * I8_NR, v.ra[g * mg + r], zero_at(cv->W, g * mg + r), zb,
					            cb, K);
				i8_conv_store(cv, &e, exact, n, g, n0, w, v.c, 1, 1);
			}
		}
}
#endif

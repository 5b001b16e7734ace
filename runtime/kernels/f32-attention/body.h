/*
 * f32-attention/body.h - a vector variant's `block` (attention.h), over the
 * type V of W float lanes that the including file defines (with vzero, vset,
 * vload, vstore, vadd, vsub, vmul, vdiv, vfma, vmin, vmax, what
 * f32-vmath/exp.h needs, and transpose_w: a W x W block transposed in
 * registers; VMATH_ROUND may be defined, see exp.h) and the register tiles
 * of its ISA:
 *   scores  SC_KEYS keys by NB vectors of query rows (one group of NB W
 *           lanes; the block's R rows are R / (NB W) groups);
 *   P V     PV_ROWS query rows by PV_VECS vectors of V's row (PV_VECS W = 16).
 * Lanes past `rows` compute on zero queries and are never stored.
 */
#include <string.h>

#include "../f32-vmath/exp.h"

#ifdef VMATH_FRAC
#define EXP2_NONPOS v_exp2_nonpos_frac
#else
#define EXP2_NONPOS v_exp2_nonpos
#endif

#define INLINE static inline __attribute__((always_inline))

enum { R = KILN_ATTENTION_ROWS, GW = NB * W };
#define LOG2E 1.4426950408889634  /* the scores are kept in units of log2 e: exp(s) = 2^(s log2 e) */

/* dst[c * R + r] = src[r * rs + c] (times sc when scaled) for r < nrows
 * and c < ncols, 0 in the lanes nrows <= r < lanes (a multiple of W): W x W
 * blocks transposed in registers, the partial ones at the edges through a
 * zero-padded copy. */
INLINE void transpose_rows(const float *src, int64_t rs, int nrows, int64_t ncols, int lanes,
                           float *dst, int scaled, V sc)
{
	for (int r0 = 0; r0 < lanes; r0 += W)
		for (int64_t c0 = 0; c0 < ncols; c0 += W) {
			const int nr = nrows - r0 >= W ? W : nrows > r0 ? nrows - r0 : 0;
			const int nc = ncols - c0 >= W ? W : (int)(ncols - c0);
			V t[W];
			if (nr == W && nc == W) {
				#pragma GCC unroll 16
				for (int i = 0; i < W; i++)
					t[i] = vload(src + (r0 + i) * rs + c0);
			} else {
				float buf[W][W];
				memset(buf, 0, sizeof buf);
				for (int i = 0; i < nr; i++)
					memcpy(buf[i], src + (r0 + i) * rs + c0, (size_t)nc * sizeof(float));
				#pragma GCC unroll 16
				for (int i = 0; i < W; i++)
					t[i] = vload(buf[i]);
			}
			transpose_w(t);
			for (int i = 0; i < nc; i++)
				vstore(dst + (c0 + i) * R + r0, scaled ? vmul(t[i], sc) : t[i]);
		}
}

/* Qt[d * R + r] = scale * q[r, d]; lanes from rows to the end of the last
 * group zero. */
INLINE void pack_q(const AttnBlock *a, int lanes)
{
	const V sc = vset((float)((double)a->scale * LOG2E));
	const float sc1 = (float)((double)a->scale * LOG2E);
	if (a->qds == 1) {
		transpose_rows(a->q, a->qrs, a->rows, a->head_dim, lanes, a->Qt, 1, sc);
		return;
	}
	for (int r = 0; r < lanes; r++)
		for (int64_t d = 0; d < a->head_dim; d++)
			a->Qt[d * R + r] = r < a->rows ? a->q[r * a->qrs + d * a->qds] * sc1 : 0.0f;
}

/* P[j * R + r] = a->mask_rows[r * a->mask_rs + j] for r < rows (0 for the
 * lanes from rows to `lanes`). A copy: the same values in every variant. */
INLINE void pack_mask(const AttnBlock *a, int lanes)
{
	transpose_rows(a->mask_rows, a->mask_rs, a->rows, a->kv_len, lanes, a->P, 0, vzero());
}

/* P[j, lanes g..] for keys j0 .. j0 + nj - 1 (nj <= SC_KEYS), the mask
 * added; m = the running maximum */
INLINE void score_tile(const AttnBlock *a, int64_t j0, int nj, int64_t g, V m[NB])
{
	V acc[SC_KEYS][NB];
	#pragma GCC unroll 16
	for (int jj = 0; jj < nj; jj++)
		#pragma GCC unroll 16
		for (int b = 0; b < NB; b++)
			acc[jj][b] = vzero();
	const float *k = a->K + j0 * a->kld, *qt = a->Qt + g;
	for (int64_t d = 0; d < a->head_dim; d++) {
		V q[NB];
		#pragma GCC unroll 16
		for (int b = 0; b < NB; b++)
			q[b] = vload(qt + d * R + b * W);
		#pragma GCC unroll 16
		for (int jj = 0; jj < nj; jj++) {
			V kv = vset(k[jj * a->kld + d]);
			#pragma GCC unroll 16
			for (int b = 0; b < NB; b++)
				acc[jj][b] = vfma(kv, q[b], acc[jj][b]);
		}
	}
	#pragma GCC unroll 16
	for (int jj = 0; jj < nj; jj++) {
		float *p = a->P + (j0 + jj) * R + g;
		V mk = a->mask_row ? vset(a->mask_row[(j0 + jj) * a->mask_js] * (float)LOG2E) : vzero();
		#pragma GCC unroll 16
		for (int b = 0; b < NB; b++) {
			V s = acc[jj][b];
			if (a->mask_t)
				s = vfma(vload(p + b * W), vset((float)LOG2E), s);
			else if (a->mask_row)
				s = vadd(s, mk);
			vstore(p + b * W, s);
			m[b] = vmax(m[b], s);
		}
	}
}

/* the scores of lanes g .. g + GW - 1, their exponentials and 1 / sum */
static void softmax_group(const AttnBlock *a, int64_t g, float *linv)
{
	V m[NB], l[NB];
	#pragma GCC unroll 16
	for (int b = 0; b < NB; b++)
		m[b] = vset(-INFINITY), l[b] = vzero();
	int64_t j = 0;
	for (; j + SC_KEYS <= a->kv_len; j += SC_KEYS)
		score_tile(a, j, SC_KEYS, g, m);
	/* the last keys in one tile of their number (each a constant, so its
	 * accumulators stay in registers): their FMA chains side by side, not one
	 * key's chain over d after another. Each score is the same chain, and the
	 * maximum takes the keys in the same order: the same bits. */
	_Static_assert(SC_KEYS <= 8, "the tail's cases cover 1 .. 7 keys");
	switch (a->kv_len - j) {
#define SCORE_TAIL(n) \
	case n: score_tile(a, j, n < SC_KEYS ? n : 1, g, m); break;
	SCORE_TAIL(1) SCORE_TAIL(2) SCORE_TAIL(3) SCORE_TAIL(4) SCORE_TAIL(5) SCORE_TAIL(6)
	SCORE_TAIL(7)
#undef SCORE_TAIL
	default: break;
	}
	for (j = 0; j < a->kv_len; j++) {
		#pragma GCC unroll 16
		for (int b = 0; b < NB; b++) {
			float *p = a->P + j * R + g + b * W;
			V e = EXP2_NONPOS(vsub(vload(p), m[b]));
			vstore(p, e);
			l[b] = vadd(l[b], e);
		}
	}
	#pragma GCC unroll 16
	for (int b = 0; b < NB; b++)
		vstore(linv + g + b * W, vdiv(vset(1.0f), l[b]));
}

/* y rows r0 .. r0 + PV_ROWS - 1 (those < rows), columns c .. c + 16 */
INLINE void pv_tile(const AttnBlock *a, int r0, int64_t c, const float *linv)
{
	V acc[PV_ROWS][PV_VECS];
	#pragma GCC unroll 16
	for (int r = 0; r < PV_ROWS; r++)
		#pragma GCC unroll 16
		for (int b = 0; b < PV_VECS; b++)
			acc[r][b] = vzero();
	const float *p = a->P + r0, *v = a->V + c;
	for (int64_t j = 0; j < a->kv_len; j++) {
		V vv[PV_VECS];
		#pragma GCC unroll 16
		for (int b = 0; b < PV_VECS; b++)
			vv[b] = vload(v + j * a->vld + b * W);
		#pragma GCC unroll 16
		for (int r = 0; r < PV_ROWS; r++) {
			V pj = vset(p[j * R + r]);
			#pragma GCC unroll 16
			for (int b = 0; b < PV_VECS; b++)
				acc[r][b] = vfma(pj, vv[b], acc[r][b]);
		}
	}
	for (int r = 0; r < PV_ROWS && r0 + r < a->rows; r++) {
		V inv = vset(linv[r0 + r]);
		float *y = a->y + (r0 + r) * a->yrs;
		#pragma GCC unroll 16
		for (int b = 0; b < PV_VECS; b++) {
			int64_t col = c + b * W;
			V out = vmul(acc[r][b], inv);
			if (col + W <= a->v_dim) {
				vstore(y + col, out);
			} else if (col < a->v_dim) {
				float tmp[W];
				vstore(tmp, out);
				for (int64_t e = 0; e < a->v_dim - col; e++)
					y[col + e] = tmp[e];
			}
		}
	}
}

static void SUFFIX(block)(const AttnBlock *a)
{
	const int lanes = (a->rows + GW - 1) / GW * GW;
	float linv[R];
	pack_q(a, lanes);
	if (a->mask_rows)
		pack_mask(a, lanes);
	for (int g = 0; g < lanes; g += GW)
		softmax_group(a, g, linv);
	for (int r0 = 0; r0 < a->rows; r0 += PV_ROWS)
		for (int64_t c = 0; c < a->v_dim; c += PV_VECS * W)
			pv_tile(a, r0, c, linv);
}

const AttnOps ATTN_OPS = {SUFFIX(block)};

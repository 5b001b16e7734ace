/*
 * f32-conv/direct.h - the packed convolution's insides (not libkiln's API):
 * the weight layout the compiler writes, and the tile each ISA variant
 * provides (direct.c is the driver and the one dispatch point).
 *
 * Weights ("conv32"): W [M, K] (K = C * kH * kW, row-major as ONNX stores it)
 * in blocks of CONV_BLOCK = 32 output channels (the last one narrower: bw =
 * M - m0 rows). Block b starts at element m0 * K and holds its K columns one
 * after the other, each bw floats:
 *
 *     packed[m0 * K + k * bw + i] = W[m0 + i, k]      (0 <= i < bw)
 *
 * so the AVX-512 row tile reads a column as two zmm loads of one stream, a
 * tile of 8 channels reads 8 floats of each column (8 broadcasts per k, a
 * stream with stride bw), and the layout holds exactly M * K floats (the
 * weights object does not grow).
 *
 * The input: each image is copied once into work memory as its padded
 * "phase planes": for strides sH x sW, plane (c, py, px) holds the padded
 * input's rows py, py + sH, ... and columns px, px + sW, ... (only the phases
 * some tap reads), Hq x Wq floats, zeros where the padding is. Output pixel
 * (oh, ow) at "wide" index q = oh * Wq + ow then reads, for column k = (c,
 * i, j) of W, the float at koff[k] + q: one offset per k, the same for every
 * pixel, so a tile of pixels is a run of contiguous loads whatever the
 * padding, stride or dilation. Lanes with ow >= OW are computed and dropped.
 */
#ifndef KILN_F32_CONV_DIRECT_H
#define KILN_F32_CONV_DIRECT_H

#include <stdint.h>

#include "kiln/kernels.h"

enum { CONV_MR = 8, CONV_BLOCK = 32 };

/* One tile: rows (<= 8) output channels m0... of one block by np (<= the
 * variant's width) wide pixels q0... from xb, summed over K, then stored to
 * the pixels of Y that are real (ow < OW) with the epilogue: + bias[m],
 * + res (shaped like Y), the activation. */
typedef struct ConvTile {
	int64_t K;
	const float *w;          /* weight (m0, column 0) in the packed block */
	int64_t ws;              /* floats from one column of the block to the next (bw) */
	int rows, np;
	const int64_t *koff;     /* [K]: column k reads xb[koff[k] + j] */
	const float *xb;         /* the image's planes + the tile's first wide pixel */
	int64_t q0, Wq, OW, ohw, m0;
	float *Y;                /* the image's output */
	const float *res;        /* the image's residual, or NULL */
	const float *bias;       /* [M] or NULL */
	const kiln_epilogue *ep; /* or NULL */
	/* The real pixels again, for a variant that compresses its lanes: bit j
	 * is set when lane j is a real pixel; in order they are the outputs y0,
	 * y0 + 1, ... of every output plane (the real pixels of consecutive wide
	 * rows are consecutive in Y). */
	uint64_t real;
	int64_t y0;
} ConvTile;

typedef void (*conv_tile_fn)(const ConvTile *t);

enum { CONV_MAX_RUNS = 64 };

/* The tile's lanes as runs along output rows: lanes [lane[r], lane[r] +
 * len[r]) go to Y + yoff[r] (+ m * ohw); returns the count. */
static inline int conv_runs(const ConvTile *t, int lane[CONV_MAX_RUNS],
                            int64_t yoff[CONV_MAX_RUNS], int len[CONV_MAX_RUNS])
{
	int n = 0;
	for (int64_t q = t->q0, end = t->q0 + t->np; q < end;) {
		int64_t oh = q / t->Wq, ow = q % t->Wq;
		if (ow >= t->OW) {
			q += t->Wq - ow;
			continue;
		}
		int64_t l = t->OW - ow < end - q ? t->OW - ow : end - q;
		lane[n] = (int)(q - t->q0), yoff[n] = oh * t->OW + ow, len[n] = (int)l;
		n++;
		q += l;
	}
	return n;
}

/* The variants' tiles and their widths in pixels. */
enum { CONV_NP_REF = 16, CONV_NP_AVX2 = 16, CONV_NP_AVX512 = 48 };
void kiln_conv_tile_ref(const ConvTile *t);
void kiln_conv_tile_avx2(const ConvTile *t);
void kiln_conv_tile_avx512(const ConvTile *t);

/* The row tile, for outputs whose rows are too short for a tile of wide
 * pixels to be mostly real: 32 output channels m0... (one whole block) by
 * two runs of up to CONV_RUN real pixels, each inside one output row (wide
 * pixels q[r]..., outputs yoff[r]... of every output plane), summed over K
 * in the same order as a ConvTile and stored with the same epilogue, so the
 * results are the same bits. */
enum { CONV_RUN = 7, CONV_ROW_M = 32 };
typedef struct ConvRowTile {
	int64_t K;
	const float *w;          /* the block's packed weights: K columns of 32 floats */
	const int64_t *koff;     /* [K] */
	const float *xb;         /* the image's planes */
	int64_t q[2], yoff[2];
	int len[2];              /* 1..CONV_RUN; len[1] may be 0 */
	int64_t m0, ohw;
	float *Y;
	const float *res;
	const float *bias;
	const kiln_epilogue *ep;
} ConvRowTile;
void kiln_conv_rowtile_avx512(const ConvRowTile *t);

/* A stride-2 row of a phase plane: d[u] = s[2 u] for 0 <= u < n (reads no
 * further than s[2 n - 2]). */
typedef void (*conv_row2_fn)(float *d, const float *s, int64_t n);
void kiln_conv_row2_avx512(float *d, const float *s, int64_t n);

#endif

#ifdef CONV_TILE_NAME
#include <math.h>

/* The portable tile, included by a variant file that defines CONV_TILE_NAME
 * and CONV_TILE_NP (compiled with that variant's flags: plain loops the
 * compiler vectorizes). Sums in the order k = 0, 1, ..., each product added
 * by fmaf (one rounding), as the AVX-512 tiles' FMAs: the same bits in every
 * variant (docs/reproducibility.md). */
void CONV_TILE_NAME(const ConvTile *t)
{
	float acc[CONV_MR][CONV_TILE_NP];
	int rows = t->rows, np = t->np;
	for (int i = 0; i < CONV_MR; i++)
		for (int j = 0; j < CONV_TILE_NP; j++)
			acc[i][j] = 0.0f;
	const float *w = t->w;
	for (int64_t k = 0; k < t->K; k++, w += t->ws) {
		const float *b = t->xb + t->koff[k];
		float bv[CONV_TILE_NP];
		for (int j = 0; j < CONV_TILE_NP; j++)
			bv[j] = j < np ? b[j] : 0.0f;
		for (int i = 0; i < rows; i++)
			for (int j = 0; j < CONV_TILE_NP; j++)
				acc[i][j] = fmaf(w[i], bv[j], acc[i][j]);
	}
	int lane[CONV_MAX_RUNS], len[CONV_MAX_RUNS];
	int64_t yoff[CONV_MAX_RUNS];
	int nruns = conv_runs(t, lane, yoff, len);
	const kiln_epilogue *ep = t->ep;
	int act = ep ? ep->act : KILN_ACT_NONE;
	for (int i = 0; i < rows; i++) {
		int64_t m = t->m0 + i;
		float b = t->bias ? t->bias[m] : 0.0f;
		for (int r = 0; r < nruns; r++) {
			int64_t at = m * t->ohw + yoff[r];
			float *y = t->Y + at;
			for (int u = 0; u < len[r]; u++) {
				float v = acc[i][lane[r] + u] + b;
				if (t->res)
					v += t->res[at + u];
				if (act == KILN_ACT_RELU)
					v = v > 0.0f ? v : 0.0f;
				y[u] = v;
			}
			if (act != KILN_ACT_NONE && act != KILN_ACT_RELU)
				kiln_f32_act(y, len[r], ep);
		}
	}
}
#endif

/*
 * f32-conv/direct.h - the packed convolution's insides (not libkiln's API):
 * the weight layout the compiler writes, and the tile each ISA variant
 * provides (direct.c is the driver and the one dispatch point).
 *
 * Weights ("conv8"): W [M, K] (K = C * kH * kW, row-major as ONNX stores it)
 * in groups of CONV8_MR = 8 output channels (the last one narrower: gw =
 * M - m0 rows). Group g starts at element m0 * K and holds its K columns one
 * after the other, each gw floats:
 *
 *     packed[m0 * K + k * gw + i] = W[m0 + i, k]      (0 <= i < gw)
 *
 * so a tile reads its weights as one stream (8 broadcasts per k) and the
 * layout holds exactly M * K floats (the weights object does not grow).
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

enum { CONV8_MR = 8 };

/* One tile: rows (<= 8) output channels of one group by np (<= the variant's
 * width) wide pixels from xb, summed over K into out[i * ldo + j]. */
typedef struct ConvTile {
	int64_t K;
	const float *w;          /* the group's packed weights: K columns of rows floats */
	int rows, np;
	const int64_t *koff;     /* [K]: column k reads xb[koff[k] + j] */
	const float *xb;         /* the image's planes + the tile's first wide pixel */
	float *out;
	int ldo;
} ConvTile;

typedef void (*conv_tile_fn)(const ConvTile *t);

/* The variants' tiles and their widths in pixels. */
enum { CONV_NP_REF = 16, CONV_NP_AVX2 = 16, CONV_NP_AVX512 = 48 };
void kiln_conv_tile_ref(const ConvTile *t);
void kiln_conv_tile_avx2(const ConvTile *t);
void kiln_conv_tile_avx512(const ConvTile *t);

#endif

#ifdef CONV_TILE_NAME
/* The portable tile, included by a variant file that defines CONV_TILE_NAME
 * and CONV_TILE_NP (compiled with that variant's flags: plain loops the
 * compiler vectorizes). Sums in the order k = 0, 1, ... */
void CONV_TILE_NAME(const ConvTile *t)
{
	float acc[CONV8_MR][CONV_TILE_NP];
	int rows = t->rows, np = t->np;
	for (int i = 0; i < CONV8_MR; i++)
		for (int j = 0; j < CONV_TILE_NP; j++)
			acc[i][j] = 0.0f;
	const float *w = t->w;
	for (int64_t k = 0; k < t->K; k++, w += rows) {
		const float *b = t->xb + t->koff[k];
		float bv[CONV_TILE_NP];
		for (int j = 0; j < CONV_TILE_NP; j++)
			bv[j] = j < np ? b[j] : 0.0f;
		for (int i = 0; i < rows; i++)
			for (int j = 0; j < CONV_TILE_NP; j++)
				acc[i][j] += w[i] * bv[j];
	}
	for (int i = 0; i < rows; i++)
		for (int j = 0; j < np; j++)
			t->out[i * t->ldo + j] = acc[i][j];
}
#endif

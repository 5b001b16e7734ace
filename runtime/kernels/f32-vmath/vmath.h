/*
 * f32-vmath/vmath.h - the variants of the vector math kernels (not part of
 * libkiln's API; the entry points are kiln_f32_unary and kiln_f32_act in
 * kernels.h, dispatched once per call in vmath.c).
 *
 * Each variant file (ref.c, avx2.c, avx512.c) defines a vector type V of W
 * float lanes and the handful of operations on it that body.h needs, then
 * includes body.h, which defines the functions below with the variant's
 * suffix. The algorithm is therefore the same in every variant: ref computes
 * it one lane at a time with fmaf where the SIMD variants fuse, and every
 * variant's results depend only on the input value (never on its position
 * or on n). The elementwise functions (kiln_f32_unary, the activations)
 * give the same bits in every variant, and so do Softmax's and LayerNorm's
 * sums (16 double lanes in a fixed tree) and the LSTM's steps (the GEMM's
 * order over k, the cell's division exact): docs/reproducibility.md.
 */
#ifndef KILN_F32_VMATH_H
#define KILN_F32_VMATH_H

#include "kiln/kernels.h"

/* The whole recurrence of one batch row of an LSTM in gate blocks
 * (kernels.h) with the default activations, for vmath's lstm_row: steps
 * s = 0 .. len-1 at time t = s (reverse: len-1-s). */
typedef struct VmathLstmRow {
	int64_t H, len;
	int reverse, by_blocks;     /* by_blocks: block after block (rnn.c's row_by_blocks) */
	const float *xw;            /* time t's input gates at xw + t * xw_t (gate blocks) */
	int64_t xw_t;
	const float *R, *P;         /* R^T in gate blocks, packed b32; the peepholes or NULL */
	float *c, *h;               /* the state, updated in place */
	float *x, *g;               /* scratch: h_{t-1} [H], the gates [4H] */
	float *Y;                   /* NULL, or h of time t to Y + t * y_t */
	int64_t y_t;
	int has_clip, input_forget;
	float clip;
	/* f32-gemv's one-row product of the same variant (gemv.h) */
	void (*gemv)(int64_t N, int64_t K, const float *x, const float *Bp, const float *bias,
	             float *y);
} VmathLstmRow;

/* A variant's kernels (body.h), picked once per call by vmath_ops(). */
typedef struct VmathOps {
	/* y[i] = f(x[i]) for the kiln_unary op */
	void (*unary)(int op, const float *x, float *y, int64_t n);
	/* in place: y[i] = act(y[i]) for ep->act, one loop per activation */
	void (*act)(float *y, int64_t n, const kiln_epilogue *ep);
	/* one contiguous Softmax (is_log 0) or LogSoftmax line, len >= 1; y may be x */
	void (*softmax_line)(const float *x, float *y, int64_t len, int is_log);
	/* rows LayerNorm rows of n >= 1 (n apart) of x, or of x + res (res not
	 * NULL: the float sum, stored in y first); bias may be NULL; y may be x
	 * or res */
	void (*layernorm_rows)(const float *x, const float *res, const float *scale,
	                       const float *bias, float *y, int64_t rows, int64_t n, float epsilon);
	/* y = (x - mean) * gain + bias over n elements; y may be x */
	void (*batchnorm_plane)(const float *x, float *y, int64_t n, float mean, float gain,
	                        float bias);
	/* units 0 .. m-1 of one row of an LSTM step with the default activations:
	 * g + x the gates i, o, f, c (ld apart), P the peepholes (ld apart) or
	 * NULL; c[0..m) updated, h[0..m) written */
	void (*lstm_cell)(const float *g, const float *x, const float *P, float *c, float *h,
	                  int64_t m, int64_t ld, int has_clip, float clip, int input_forget);
	/* one row's step of a whole LSTM gate block (16 units): the gates
	 * x[0..K) R (the block's two b32 panels of R^T) + xw, then the cell as
	 * lstm_cell's with ld 16; c[0..16) updated, h[0..16) written */
	void (*lstm_block)(int64_t K, const float *x, const float *R, const float *xw,
	                   const float *P, float *c, float *h, int has_clip, float clip,
	                   int input_forget);
	/* one row's cells of an LSTM step in gate blocks: units 0 .. H-1, each
	 * block as lstm_cell of its block (g, x, P at 64 b, ld its width) */
	void (*lstm_cells)(const float *g, const float *x, const float *P, float *c, float *h,
	                   int64_t H, int has_clip, float clip, int input_forget);
	/* one step of the whole gate blocks (H / 16 of them) of rows 0 .. rows-1:
	 * each row's gates x[i H .. i H + H) R^T (R^T in gate blocks, packed b32,
	 * K = H) + xw (row i at i * ldxw), then the cells; c (row i at i * H)
	 * updated, h (the same) written; x may not alias h */
	void (*lstm_rows)(int64_t rows, int64_t H, const float *x, const float *R, const float *xw,
	                  int64_t ldxw, const float *P, float *c, float *h, int has_clip, float clip,
	                  int input_forget);
	/* every step of one batch row (VmathLstmRow): the cells called directly,
	 * the whole blocks' inlined into the time loop */
	void (*lstm_row)(const VmathLstmRow *a);
} VmathOps;

/* The kernels of the variant kiln_isa() names: the one dispatch point. */
const VmathOps *vmath_ops(void);

extern const VmathOps kiln_vmath_ref, kiln_vmath_avx2, kiln_vmath_avx512;

#endif

/*
 * wino_check.h - what the two Winograd kernel tests (test_winograd.c,
 * test_winograd1d.c) do alike: a case's buffers and random operands, and
 * the kernel's call checked against the double-precision reference the test
 * computes, hashed, and compared bit for bit with each image convolved
 * alone. Include after harness.h.
 */
#ifndef KILN_TEST_WINO_CHECK_H
#define KILN_TEST_WINO_CHECK_H

#include "kiln/kernels.h"

/* A Winograd convolution: kiln_f32_conv2d_winograd, kiln_f32_conv1d_wino. */
typedef void (*WinoKernel)(const kiln_conv2d_params *p, const float *X, const float *U,
                           const float *bias, float *Y, const kiln_epilogue *ep, float *work);

/* Its work size (kiln_f32_conv2d_winograd_work, kiln_f32_conv1d_wino_work). */
typedef int64_t (*WinoWork)(const kiln_conv2d_params *p);

/* A case's buffers: X and Y off their alignment and guarded, the kernel's
 * work for the batch and for one image (guarded), the operands W, B
 * (bias) and R (residual) uniform in [-1, 1), Wmis + 1: W one byte off its
 * alignment (for the packer, which must not assume one), Y1 one image's
 * output, want and bound the reference the test computes. */
typedef struct WinoBufs {
	Guarded gx, gy, gw, gw1;
	float *X, *Y, *work, *work1, *W, *B, *R, *Y1;
	char *Wmis;
	double *want, *bound;
} WinoBufs;

/* Allocates b for p (W [nw]) and fills X, W, B and R, in that order. */
static inline void wino_alloc(WinoBufs *b, WinoWork work, const kiln_conv2d_params *p, int64_t nw)
{
	int64_t nx = p->batch * p->in_channels * p->in_h * p->in_w;
	int64_t per = p->out_channels * p->out_h * p->out_w, ny = p->batch * per;
	kiln_conv2d_params p1 = *p;
	p1.batch = 1;
	b->X = guarded_alloc(&b->gx, (size_t)nx * sizeof(float), 4);
	b->Y = guarded_alloc(&b->gy, (size_t)ny * sizeof(float), 8);
	b->work = guarded_alloc(&b->gw, (size_t)work(p) * sizeof(float), 8);
	b->work1 = guarded_alloc(&b->gw1, (size_t)work(&p1) * sizeof(float), 8);
	b->W = xmalloc((size_t)nw * sizeof(float));
	b->B = xmalloc((size_t)p->out_channels * sizeof(float));
	b->R = xmalloc((size_t)ny * sizeof(float));
	b->Y1 = xmalloc((size_t)per * sizeof(float));
	b->want = xmalloc((size_t)ny * sizeof(double));
	b->bound = xmalloc((size_t)ny * sizeof(double));
	fill_uniform(b->X, nx, -1.0f, 1.0f);
	fill_uniform(b->W, nw, -1.0f, 1.0f);
	fill_uniform(b->B, p->out_channels, -1.0f, 1.0f);
	fill_uniform(b->R, ny, -1.0f, 1.0f);
	b->Wmis = xmalloc((size_t)nw * sizeof(float) + 1);
	memcpy(b->Wmis + 1, b->W, (size_t)nw * sizeof(float));
}

/* Runs f on the batch p with the packed filters U (bias B when bias,
 * residual R when residual, activation act with act_ref.h's parameters)
 * into Y, checks Y against want within tol of bound, raises *worst, folds
 * Y's bytes into the FNV-1a *hash, then runs each image alone and checks
 * it gives the batch's bits; last, checks the guards and frees b. */
static inline void wino_check(WinoKernel f, const kiln_conv2d_params *p, const float *U,
                              WinoBufs *b, int bias, int residual, int act, double tol,
                              const char *what, double *worst, uint64_t *hash)
{
	int64_t xper = p->in_channels * p->in_h * p->in_w;
	int64_t per = p->out_channels * p->out_h * p->out_w, ny = p->batch * per;
	kiln_conv2d_params p1 = *p;
	p1.batch = 1;
	const float *B = bias ? b->B : NULL;
	kiln_epilogue ep = {NULL, act, act == KILN_ACT_CLIP ? -2.0f : 0.1f, 2.0f,
	                    residual ? b->R : NULL};
	int with_ep = act != KILN_ACT_NONE || residual;
	f(p, b->X, U, B, b->Y, with_ep ? &ep : NULL, b->work);
	track_worst(b->Y, b->want, b->bound, ny, worst);
	CHECK_CLOSE(what, b->Y, b->want, b->bound, ny, tol);
	for (int64_t i = 0; i < ny * (int64_t)sizeof(float); i++)
		*hash = (*hash ^ ((const unsigned char *)b->Y)[i]) * 1099511628211u;
	/* each image alone gives the same bits as in the batch */
	int same = 1;
	for (int64_t n = 0; n < p->batch; n++) {
		kiln_epilogue e1 = ep;
		e1.residual = residual ? b->R + n * per : NULL;
		f(&p1, b->X + n * xper, U, B, b->Y1, with_ep ? &e1 : NULL, b->work1);
		same &= memcmp(b->Y1, b->Y + n * per, (size_t)per * sizeof(float)) == 0;
	}
	CHECK(same, what);
	CHECK(guarded_intact(&b->gx) && guarded_intact(&b->gy) && guarded_intact(&b->gw) &&
	      guarded_intact(&b->gw1), what);
	guarded_free(&b->gx), guarded_free(&b->gy), guarded_free(&b->gw), guarded_free(&b->gw1);
	free(b->W), free(b->Wmis), free(b->B), free(b->R), free(b->Y1), free(b->want),
		free(b->bound);
}

#endif

/*
 * ops/conv_algo.c - which kernel a float Conv runs, decided once for the
 * planner and the emitter: the window geometry as the kernels take it, the
 * packed direct path, the 1-D Winograd F(4, 3) or Winograd F(2x2, 3x3),
 * and the arena scratch that path needs (conv_scratch_bytes, node_scratch_bytes in plan.c). emit/conv.c
 * writes the call the same functions chose, so the plan and the generated
 * code cannot disagree, and the planner never calls the emitter.
 *
 * The Winograd thresholds were measured on ResNet-18 against the packed
 * direct path (docs/kernels.md, Winograd): by the shape alone, never the
 * batch size or the ISA (issue 30, docs/reproducibility.md).
 */
#include <string.h>

#include "ops/ops.h"

enum {
	WINOGRAD_MIN_IMAGE_TILES = 49,   /* 2x2 output tiles an image */
	WINOGRAD_MIN_WIDTH = 13,
	WINOGRAD_BATCH_TILES = 64,       /* --winograd: 2x2 tiles of the whole batch */
};

/* The spatial geometry of a window op, as shape.c derived it (false: not 1-
 * to 3-D). */
bool window_geometry(Infer *x_, const Shape *x, const Shape *y, const Shape *w, WindowGeo *g)
{
	int ns = x->rank - 2;
	if (ns < 1 || ns > 3)
		return false;
	g->ns = ns;
	Infer inf = *x_;
	int64_t v[6];
	for (int i = 0; i < 3; i++) {
		g->k[i] = g->s[i] = g->d[i] = 1;
		g->pb[i] = g->pe[i] = 0;
		g->in[i] = g->outsz[i] = 1;
	}
	int off = 3 - ns;
	for (int i = 0; i < ns; i++) {
		g->in[off + i] = x->dims[2 + i].size;
		g->outsz[off + i] = y->dims[2 + i].size;
		g->k[off + i] = w ? w->dims[2 + i].size : 1;
	}
	if (!w) {
		int nk = attr_ints(&inf, "kernel_shape", v, 6);
		for (int i = 0; i < nk && i < ns; i++)
			g->k[off + i] = v[i];
	}
	int n = attr_ints(&inf, "strides", v, 6);
	for (int i = 0; i < n && i < ns; i++)
		g->s[off + i] = v[i];
	n = attr_ints(&inf, "dilations", v, 6);
	for (int i = 0; i < n && i < ns; i++)
		g->d[off + i] = v[i];
	g->group = attr_int(&inf, "group", 1);
	g->storage_order = (int)attr_int(&inf, "storage_order", 0);
	g->count_include_pad = (int)attr_int(&inf, "count_include_pad", 0);
	const char *ap = attr_string(&inf, "auto_pad", "NOTSET");
	n = attr_ints(&inf, "pads", v, 6);
	for (int i = 0; i < ns; i++) {
		int j = off + i;
		if (strncmp(ap, "SAME", 4) == 0) {
			int64_t span = (g->k[j] - 1) * g->d[j] + 1;
			int64_t total = (g->outsz[j] - 1) * g->s[j] + span - g->in[j];
			if (total < 0)
				total = 0;
			g->pb[j] = ap[5] == 'U' ? total / 2 : total - total / 2;
			g->pe[j] = total - g->pb[j];
		} else if (strcmp(ap, "NOTSET") == 0 && n == 2 * ns) {
			g->pb[j] = v[i];
			g->pe[j] = v[ns + i];
		}
	}
	return true;
}

/* A 1-D convolution written as 2-D over images one pixel wide ([N, C, P, 1],
 * kernel (k, 1): DeepBoostedJet's ResNet over particles) has the memory
 * layout of the same convolution over [N, C, 1, P] with kernel (1, k): the
 * rows become one wide row, the layout the kernels' row tiles are built for
 * (a Conv1d's). Swaps H and W in g when that is so. */
void column_as_row(WindowGeo *g)
{
	if (g->ns != 2 || g->in[2] != 1 || g->k[2] != 1 || g->outsz[2] != 1 || g->pb[2] != 0 ||
	    g->pe[2] != 0 || g->in[1] == 1)
		return;
	int64_t *f[] = {g->k, g->s, g->d, g->pb, g->pe, g->in, g->outsz};
	for (int i = 0; i < 7; i++) {
		int64_t t = f[i][1];
		f[i][1] = f[i][2];
		f[i][2] = t;
	}
}

/* A 1-D or 2-D Conv's parameters, a 1-D one as a row (false: neither). */
bool conv2d_params(Infer *inf, const Shape *x, const Shape *y, const Shape *w,
                          kiln_conv2d_params *p)
{
	WindowGeo g;
	if (!window_geometry(inf, x, y, w, &g) || g.ns > 2)
		return false;
	column_as_row(&g);
	*p = (kiln_conv2d_params){
		.batch = x->dims[0].size, .in_channels = x->dims[1].size, .in_h = g.in[1],
		.in_w = g.in[2], .out_channels = y->dims[1].size,
		.group = g.group, .kernel_h = g.k[1], .kernel_w = g.k[2],
		.stride_h = g.s[1], .stride_w = g.s[2], .dilation_h = g.d[1], .dilation_w = g.d[2],
		.pad_top = g.pb[1], .pad_left = g.pb[2], .pad_bottom = g.pe[1], .pad_right = g.pe[2],
		.out_h = g.outsz[1], .out_w = g.outsz[2]};
	return true;
}

/* A Conv the Winograd F(2x2, 3x3) path takes (runtime/kernels/f32-winograd:
 * 3x3, stride 1, undilated, ungrouped, at least 16 input and 16 output
 * channels) and wins (measured on ResNet-18 against the packed direct path,
 * docs/kernels.md): at least 49 2x2 output tiles an image and 13 output
 * columns. Decided by the shape alone, never the batch size or the ISA: the
 * kernel gives the same bits under every variant and at every batch size
 * (issue 30), and the compiler stores its transformed filters (16 floats
 * for every 9 of the weight) in the weights object in place of the weight.
 * compile --winograd also takes the Convs whose whole batch has 64 tiles
 * (the rule before issue 30): the choice then depends on the compiled batch
 * size, so a sample's bits do too (docs/reproducibility.md). */
bool winograd_wins(const Graph *g, const kiln_conv2d_params *p)
{
	if (winograd_by_shape(p))
		return true;
	int64_t image = ((p->out_h + 1) / 2) * ((p->out_w + 1) / 2);
	return g->model && g->model->winograd && kiln_f32_conv2d_winograd_takes(p) &&
	       p->out_w >= WINOGRAD_MIN_WIDTH && p->batch * image >= WINOGRAD_BATCH_TILES;
}

/* winograd_wins's default rule, by the shape alone (the batch size unused). */
bool winograd_by_shape(const kiln_conv2d_params *p)
{
	int64_t image = ((p->out_h + 1) / 2) * ((p->out_w + 1) / 2);
	return kiln_f32_conv2d_winograd_takes(p) && p->out_w >= WINOGRAD_MIN_WIDTH &&
	       image >= WINOGRAD_MIN_IMAGE_TILES;
}

/* A Conv the 1-D Winograd F(4, 3) takes (runtime/kernels/f32-winograd1d):
 * a 1-D convolution of 3 taps, stride 1, undilated, ungrouped, of at least
 * 16 input and 16 output channels and 8 outputs (a Conv1d, or a (3, 1)
 * kernel on images one pixel wide, which column_as_row made a row). Decided
 * by the shape alone, never the batch size or the ISA: the kernel gives the
 * same bits under every variant and batch size (issue 30), and the
 * compiler stores its transformed filters (twice the weight's floats) in
 * the weights object in place of the weight. */
bool wino1d_wins(const kiln_conv2d_params *p)
{
	return kiln_f32_conv1d_wino_takes(p) != 0;
}

/* A 2-D float Conv on a float weight takes the packed path
 * (kiln_f32_conv2d_packed) when the kernel does: its work memory is the
 * node's planned arena scratch (plan.c). */
int64_t conv_scratch_bytes(const Sig *s, int node, Arena *a)
{
	Node *n = &s->g->nodes[node];
	if (n->nin < 2 || n->in[0] == NONE || n->in[1] == NONE || n->nout < 1 || n->out[0] == NONE)
		return 0;
	int xi = n->in[0], wi = n->in[1], yi = n->out[0];
	const Value *wv = &s->g->values[wi];
	if (s->dtypes[xi] != DT_FLOAT || s->dtypes[wi] != DT_FLOAT || wv->kind != VAL_WEIGHT ||
	    wv->dtype != DT_FLOAT || s->shapes[xi].rank < 3 || s->shapes[xi].rank > 4 ||
	    s->shapes[wi].rank != s->shapes[xi].rank || s->shapes[yi].rank != s->shapes[xi].rank)
		return 0;
	Infer inf = {.sig = (Sig *)s, .g = s->g, .n = n, .a = a};
	kiln_conv2d_params p;
	if (!conv2d_params(&inf, &s->shapes[xi], &s->shapes[yi], &s->shapes[wi], &p))
		return 0;
	/* a 1-D Conv (rank 3) has no packed path but this one */
	if (s->shapes[xi].rank == 3 && !wino1d_wins(&p))
		return 0;
	int64_t floats = wino1d_wins(&p)           ? kiln_f32_conv1d_wino_work(&p)
	                 : winograd_wins(s->g, &p) ? kiln_f32_conv2d_winograd_work(&p)
	                                           : kiln_f32_conv2d_packed_work(&p);
	return floats > 0 ? floats * (int64_t)sizeof(float) : 0;
}


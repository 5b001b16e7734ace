/*
 * passes/convchain.c - a chain of 1x1 convolutions over [N, C, P] becomes
 * one node that runs a block of points at a time through every layer
 * (runtime/kernels/f32-convchain).
 *
 * A stack of Conv1d(kernel 1) layers with activations between (a Particle
 * Transformer's pair embedding: 4 -> 64 -> 64 -> 8 channels over the 1540
 * pairs of 55 particles; an interaction network's edge MLP as mlpconv
 * leaves it) writes each intermediate [N, width, P] tensor to memory and
 * reads it back in the next layer: 6.3 MB a layer at batch 16 there. Fused,
 * the intermediates are blocks of points that stay in cache.
 *
 * The pattern, by shape and what it computes, every shape checked in every
 * compiled signature: two or more (up to KILN_CONVCHAIN_MAX_LAYERS) float32
 * Conv nodes, each
 *   - reading x [N, C, P] (rank 3, the same C in every signature, P more
 *     than KILN_POINTWISE_MAX_PLANE points in the largest: smaller planes
 *     keep the small-plane kernel, kiln_f32_conv2d_small; buckets of the
 *     particle axis, --dim P=8,16,64, fuse at every P), with a constant float32
 *     weight [M, C, 1], 2 <= M, C <= 256 (one K block of the GEMM, so the
 *     fused kernel sums exactly as the Conv does; M = 1 runs the direct
 *     loops), a bias [M] or none, group 1, kernel 1, strides and dilations
 *     1, no padding, no fused residual, any activation fuse.c put in its
 *     epilogue (Relu, GELU, Sigmoid, ...: fused.act);
 *   - the next one reading the previous one's output as x, that output read
 *     by nothing else (and no graph output).
 * They become one KilnConvChain node (ops/convchain.c) with inputs (x, W0,
 * b0, W1, b1, ...) and kiln.acts / kiln.alphas / kiln.betas per layer; the
 * last Conv's output moves to it. Runs after fuse (activations and
 * BatchNorms already in the Convs) and edgeconv (whose 1x1 Convs are
 * rank 4). The weights are the Convs' own values: nothing is copied. The
 * output bits are the Convs' (kiln_f32_convchain: the same GEMM, the same
 * sums per element); each sample reads only its own points, so batch
 * independence holds.
 */
#include <string.h>

#include "kiln/kernels.h"
#include "rewrite.h"

enum {
	MAX_LAYERS = KILN_CONVCHAIN_MAX_LAYERS,
	MAX_K = 256,         /* f32-gemm's GEMM_KBLOCK: one K block per layer */
	MIN_POINTS = 33,     /* above f32-pointwise's KILN_POINTWISE_MAX_PLANE */
};

static bool ones(const Node *n, const char *name)
{
	const Attr *a = rw_attr(n, name);
	for (int j = 0; a && j < a->n; j++)
		if (a->type != AT_INTS || a->ints[j] != 1)
			return false;
	return !a || a->type == AT_INTS;
}

/* Is node n a Conv the chain takes, reading x with C channels? Its output
 * channels in *m. */
static bool plain_1x1(PassCtx *c, const Node *n, int x, int64_t C, int64_t *m)
{
	if (n->op != OP_Conv || n->domain_id != DOMAIN_ONNX || n->nout != 1 || n->nin < 2 ||
	    n->nin > 3 || n->in[0] != x || n->fused.residual || rw_attr_int(n, "group", 1) != 1 ||
	    !ones(n, "strides") || !ones(n, "dilations") || !ones(n, "kernel_shape") ||
	    !rw_conv_unpadded(n) || rw_dtype(c, x) != DT_FLOAT || C < 1 || C > MAX_K)
		return false;
	int w = n->in[1];
	const Value *wv = &c->g->values[w];
	if (!rw_is_const(c, w) || wv->dtype != DT_FLOAT || wv->shape.rank != 3 ||
	    wv->shape.dims[1].size != C || wv->shape.dims[2].size != 1 || wv->shape.dims[0].size < 2)
		return false;
	*m = wv->shape.dims[0].size;
	if (n->nin == 3 && n->in[2] != NONE) {
		const Value *bv = &c->g->values[n->in[2]];
		if (!rw_is_const(c, n->in[2]) || bv->dtype != DT_FLOAT || bv->shape.rank != 1 ||
		    bv->shape.dims[0].size != *m)
			return false;
	}
	int y = n->out[0];
	int64_t most = 0;
	for (int k = 0; k < c->nsigs; k++) {
		const Shape *xs = rw_shape_in(c, x, k), *ys = rw_shape_in(c, y, k);
		if (!xs || !ys || xs->rank != 3 || ys->rank != 3 || xs->dims[1].size != C ||
		    xs->dims[2].size < 1 || ys->dims[0].size != xs->dims[0].size ||
		    ys->dims[1].size != *m || ys->dims[2].size != xs->dims[2].size)
			return false;
		if (xs->dims[2].size > most)
			most = xs->dims[2].size;
	}
	return most >= MIN_POINTS;
}

/* Node n as the next part of a chain reading x with C channels: a Conv
 * the chain takes, or a chain made in an earlier iteration (its first
 * Conv's BatchNorm or activation was fused later than the others'). Its
 * layers in *nl, their output channels in *m. */
static bool part_of_chain(PassCtx *c, const Node *n, int x, int64_t C, int *nl, int64_t *m)
{
	if (n->op == OP_KilnConvChain) {
		if (n->in[0] != x || n->nout != 1)
			return false;
		const Shape *ys = rw_shape_in(c, n->out[0], 0);
		*nl = (n->nin - 1) / 2;
		*m = ys && ys->rank == 3 ? ys->dims[1].size : -1;
		return *m > 0;
	}
	*nl = 1;
	return plain_1x1(c, n, x, C, m);
}

/* The chain starting at node i (already known not to continue one). */
static bool fuse_chain(PassCtx *c, int i)
{
	Graph *g = c->g;
	int part[MAX_LAYERS], np = 0, nl = 0, x = g->nodes[i].in[0], k;
	if (x == NONE)
		return false;
	const Shape *x0 = rw_shape_in(c, x, 0);
	if (!x0 || x0->rank != 3)
		return false;
	int64_t ch = x0->dims[1].size, m;
	int v = x, node = i;
	while (node != NONE && !c->dead[node] && part_of_chain(c, &g->nodes[node], v, ch, &k, &m) &&
	       nl + k <= MAX_LAYERS) {
		part[np++] = node;
		nl += k;
		v = g->nodes[node].out[0];
		ch = m;
		node = rw_sole_user(c, v);
	}
	if (np < 2)
		return false;
	int in[1 + 2 * MAX_LAYERS], n = 0;
	int64_t act[MAX_LAYERS];
	float *alpha = arena_array(c->a, (size_t)nl, sizeof *alpha),
	      *beta = arena_array(c->a, (size_t)nl, sizeof *beta);
	in[0] = x;
	const char *members = "1x1 Conv chain:";
	for (int q = 0; q < np; q++) {
		const Node *cv = &g->nodes[part[q]];
		if (cv->op == OP_KilnConvChain) {
			const Attr *a = rw_attr(cv, "kiln.acts"), *al = rw_attr(cv, "kiln.alphas"),
			           *be = rw_attr(cv, "kiln.betas");
			for (int l = 0; 1 + 2 * l < cv->nin; l++, n++) {
				in[1 + 2 * n] = cv->in[1 + 2 * l];
				in[2 + 2 * n] = cv->in[2 + 2 * l];
				act[n] = a->ints[l];
				alpha[n] = al->floats[l];
				beta[n] = be->floats[l];
			}
			members = arena_printf(c->a, "%s%s %s", members, q ? "," : "",
			                       cv->fused.members + strlen("1x1 Conv chain: "));
			continue;
		}
		in[1 + 2 * n] = cv->in[1];
		in[2 + 2 * n] = cv->nin == 3 ? cv->in[2] : NONE;
		act[n] = cv->fused.act;
		alpha[n] = cv->fused.alpha;
		beta[n] = cv->fused.beta;
		n++;
		members = arena_printf(c->a, "%s%s Conv \"%s\"%s%s%s", members, q ? "," : "", cv->name,
		                       cv->fused.members ? " (" : "",
		                       cv->fused.members ? cv->fused.members : "",
		                       cv->fused.members ? ")" : "");
	}
	Attr at[3] = {rw_ints_attr(c, "kiln.acts", act, n),
	              {.name = "kiln.alphas", .type = AT_FLOATS, .n = n, .floats = alpha},
	              {.name = "kiln.betas", .type = AT_FLOATS, .n = n, .floats = beta}};
	const Node *first = &g->nodes[part[0]];
	const char *name = first->name[0] ? first->name : "convchain";
	int y = g->nodes[part[np - 1]].out[0];
	int last = part[np - 1];
	for (int q = 0; q < np; q++) {
		c->stat->fused += g->nodes[part[q]].op == OP_Conv;   /* the Convs it took */
		rw_kill(c, part[q]);
	}
	int p = rw_add_fused(c, last, OP_KilnConvChain, in, 1 + 2 * n, &y, 1, at, 3, name);
	c->pending[p].node.fused.members = members;
	return true;
}

int pass_convchain(PassCtx *c)
{
	int changes = 0;
	if (c->nsigs == 0)
		return 0;
	int nnodes = c->g->nnodes;
	for (int i = 0; i < nnodes; i++) {
		const Node *n = &c->g->nodes[i];
		if (c->dead[i] || (n->op != OP_Conv && n->op != OP_KilnConvChain) || n->in[0] == NONE)
			continue;
		/* a chain's head: its input is not a Conv the chain would continue */
		const Value *xv = &c->g->values[n->in[0]];
		if (xv->kind == VAL_TEMP && xv->producer != NONE && !c->dead[xv->producer] &&
		    rw_sole_user(c, n->in[0]) == i) {
			const Node *prev = &c->g->nodes[xv->producer];
			const Shape *ps = prev->in[0] != NONE ? rw_shape_in(c, prev->in[0], 0) : NULL;
			int64_t m;
			int k;
			if (ps && ps->rank == 3 &&
			    part_of_chain(c, prev, prev->in[0], ps->dims[1].size, &k, &m))
				continue;
		}
		if (fuse_chain(c, i))
			changes++;
	}
	return changes;
}

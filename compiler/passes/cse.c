/*
 * passes/cse.c - common-subexpression elimination: a node with the same op,
 * schema version, inputs and attributes as an earlier one computes the same
 * values, so its readers read the earlier node's outputs and it goes.
 *
 * Runs before folding so that, say, two Transposes of one weight become one
 * whose input then dies with it (folded once, stored once). Nodes with
 * subgraphs and ops with randomness are never merged. A node whose output is
 * a graph output stays. Shape and Size compare their input's dims in every
 * compiled signature instead of its id.
 */
#include <string.h>

#include "rewrite.h"

static bool same_weight(const Tensor *a, const Tensor *b)
{
	return a->dtype == b->dtype && rw_same_shape(&a->shape, &b->shape) &&
	       a->w.nbytes == b->w.nbytes && a->dtype != DT_STRING &&
	       (a->w.bytes == b->w.bytes || memcmp(a->w.bytes, b->w.bytes, a->w.nbytes) == 0);
}

static bool same_attr(const Attr *a, const Attr *b)
{
	if (a->type != b->type || a->n != b->n)
		return false;
	switch (a->type) {
	case AT_FLOAT: return memcmp(&a->f, &b->f, sizeof a->f) == 0;
	case AT_INT: return a->i == b->i;
	case AT_STRING: return a->s.len == b->s.len && memcmp(a->s.data, b->s.data, a->s.len) == 0;
	case AT_INTS: return a->n == 0 || memcmp(a->ints, b->ints, (size_t)a->n * sizeof *a->ints) == 0;
	case AT_FLOATS:
		return a->n == 0 || memcmp(a->floats, b->floats, (size_t)a->n * sizeof *a->floats) == 0;
	case AT_STRINGS:
		for (int i = 0; i < a->n; i++)
			if (a->strings[i].len != b->strings[i].len ||
			    memcmp(a->strings[i].data, b->strings[i].data, a->strings[i].len) != 0)
				return false;
		return true;
	case AT_TENSOR: case AT_TENSORS:
		for (int i = 0; i < a->n; i++)
			if (!same_weight(&a->tensors[i], &b->tensors[i]))
				return false;
		return true;
	default:
		return false;  /* graphs, sparse tensors, type protos: never merged */
	}
}

static bool mergeable(const Node *n)
{
	if (n->domain_id != DOMAIN_ONNX || n->op == NONE || n->nout < 1)
		return false;
	switch (n->op) {
	case OP_Dropout: case OP_RandomNormal: case OP_RandomNormalLike: case OP_RandomUniform:
	case OP_RandomUniformLike: case OP_Multinomial: case OP_Bernoulli:
		return false;
	default:
		return true;
	}
}

/* Shape and Size read only their input's dims: two of them on inputs whose
 * dims are the same known sizes in every compiled signature give the same
 * values (each transformer block's Shape of its own activations, from which
 * its exporter rebuilds the same masks and index tensors). */
static bool reads_dims_only(PassCtx *c, const Node *n)
{
	return (n->op == OP_Shape || n->op == OP_Size) && n->nin == 1 && c->nsigs > 0 &&
	       rw_shape_in(c, n->in[0], 0) != NULL;
}

static bool same_dims(PassCtx *c, int x, int y)
{
	for (int k = 0; k < c->nsigs; k++)
		if (!rw_same_shape(rw_shape_in(c, x, k), rw_shape_in(c, y, k)))
			return false;
	return true;
}

/* The same fusion (passes/fuse.c): activation, residual and the members
 * the generated C's comment names. */
static bool same_fused(const Fused *a, const Fused *b)
{
	if (a->act != b->act || a->residual != b->residual ||
	    memcmp(&a->alpha, &b->alpha, sizeof a->alpha) != 0 ||
	    memcmp(&a->beta, &b->beta, sizeof a->beta) != 0 || !a->members != !b->members)
		return false;
	return !a->members || strcmp(a->members, b->members) == 0;
}

static bool same_node(PassCtx *c, const Node *a, const Node *b)
{
	if (a->op != b->op || a->since != b->since || a->nin != b->nin || a->nout != b->nout ||
	    a->nattrs != b->nattrs || !same_fused(&a->fused, &b->fused))
		return false;
	if (reads_dims_only(c, a) && reads_dims_only(c, b)) {
		if (a->in[0] != b->in[0] && !same_dims(c, a->in[0], b->in[0]))
			return false;
	} else {
		for (int k = 0; k < a->nin; k++)
			if (a->in[k] != b->in[k])
				return false;
	}
	for (int k = 0; k < a->nattrs; k++) {
		const Attr *other = node_attr(b, a->attrs[k].name);
		if (!other || !same_attr(&a->attrs[k], other))
			return false;
	}
	return true;
}

static uint64_t node_key(PassCtx *c, const Node *n)
{
	uint64_t h = (uint64_t)n->op * 0x9e3779b97f4a7c15u;
	if (reads_dims_only(c, n)) {  /* by the dims of the first signature */
		const Shape *s = rw_shape_in(c, n->in[0], 0);
		for (int k = 0; k < s->rank; k++)
			h = (h ^ (uint64_t)(s->dims[k].size + 2)) * 0x100000001b3u;
		return h ^ (uint64_t)s->rank ^ ((uint64_t)n->nattrs << 8);
	}
	for (int k = 0; k < n->nin; k++)
		h = (h ^ (uint64_t)(n->in[k] + 2)) * 0x100000001b3u;
	return h ^ (uint64_t)n->nattrs;
}

int pass_cse(PassCtx *c)
{
	Graph *g = c->g;
	/* An open-addressing table of node ids by key; merged nodes stay out. */
	int cap = 16;
	while (cap < 2 * g->nnodes)
		cap *= 2;
	int *table = arena_array(c->a, (size_t)cap, sizeof *table);
	for (int i = 0; i < cap; i++)
		table[i] = NONE;
	int changes = 0;
	for (int i = 0; i < g->nnodes; i++) {
		Node *n = &g->nodes[i];
		if (c->dead[i] || !mergeable(n))
			continue;
		if (node_has_subgraph(n))
			continue;
		size_t slot = (size_t)node_key(c, n) & (size_t)(cap - 1);
		int twin = NONE;
		for (; table[slot] != NONE; slot = (slot + 1) & (size_t)(cap - 1))
			if (same_node(c, &g->nodes[table[slot]], n)) {
				twin = table[slot];
				break;
			}
		if (twin == NONE) {
			table[slot] = i;
			continue;
		}
		const Node *t = &g->nodes[twin];
		bool ok = true;
		for (int k = 0; k < n->nout && ok; k++)
			ok = n->out[k] == NONE || (t->out[k] != NONE && !rw_pinned(c, n->out[k]));
		if (!ok)
			continue;
		for (int k = 0; k < n->nout; k++)
			if (n->out[k] != NONE)
				rw_replace_uses(c, n->out[k], t->out[k]);
		rw_kill(c, i);
		c->stat->removed++;
		changes++;
	}
	return changes;
}

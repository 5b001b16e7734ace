/*
 * passes/rewrite.h - what the passes share: the pass context (graph, the
 * shapes of every compiled signature) and the rewriting helpers of
 * rewrite.c. See passes.h for the rules of rewriting the flat IR.
 */
#ifndef KILN_PASSES_REWRITE_H
#define KILN_PASSES_REWRITE_H

#include "passes.h"

typedef struct PendingNode {
	int before;          /* node id it is placed before (nnodes: at the end) */
	Node node;           /* id and producers are set by rw_commit */
} PendingNode;

typedef struct PassCtx {
	Model *m;
	Graph *g;
	Arena *a;
	Diag *d;
	const PassOptions *o;
	Sig *sigs;           /* shapes at the start of this iteration; nsigs 0 if unknown */
	int nsigs;
	int nvalues_shaped;  /* values that existed when the shapes were inferred */
	bool *dead;          /* per node id */
	PendingNode *pending;
	int npending, cappending;
	PassStat *stat;      /* the running pass's counters */
	bool *nested;        /* per value id (at the start): read by a subgraph */
	int nnested;
	int *user_hint;      /* per value id: a node that read it at the last commit */
	int nhint;
	int changes;         /* rewrites this pass made */
	int uniq;            /* counter for fresh value names */
} PassCtx;

/* ---- queries ---- */
/* Number of this graph's node inputs that read id (not nested graphs). */
int rw_local_uses(PassCtx *c, int id);
/* Is id read by nested graphs or listed as a graph output? Such a value
 * cannot be renamed away. */
bool rw_pinned(PassCtx *c, int id);
/* The live node producing temporary id, if it is op; else NULL. */
Node *rw_made_by(PassCtx *c, int id, int op);
/* The single node reading id, or NONE if zero or several (or pinned). */
int rw_sole_user(PassCtx *c, int id);
/* Shape/dtype of id in every signature; NULL/DT_UNDEFINED if unknown or
 * different across signatures. rw_shape_in(c, id, k) is signature k's. */
const Shape *rw_static_shape(PassCtx *c, int id);
const Shape *rw_shape_in(PassCtx *c, int id, int k);
int rw_dtype(PassCtx *c, int id);
bool rw_same_shape(const Shape *a, const Shape *b);
/* Is id a constant the passes may read (a top-graph initializer that cannot
 * be overridden at run time)? */
bool rw_is_const(PassCtx *c, int id);
/* The constant's elements as doubles (float/double/int kinds), a copy in
 * the arena; NULL if not such a constant or if it has more than max
 * elements. */
double *rw_const_f64(PassCtx *c, int id, int64_t *n, int64_t max);
/* The integers of a constant or of a value shape inference folded to the
 * same int64/int32 contents in every signature (a Slice's end computed from
 * constants), at most max of them, rank 0 or 1; false otherwise. */
bool rw_const_ints(PassCtx *c, int id, int64_t *v, int64_t max, int64_t *n);
/* Is id a constant of at least one element, every one equal to v? (No copy.) */
bool rw_const_all(PassCtx *c, int id, double v);
const Attr *rw_attr(const Node *n, const char *name);
/* A Conv with no padding: pads all 0 (or none) and auto_pad NOTSET or VALID. */
bool rw_conv_unpadded(const Node *n);
int64_t rw_attr_int(const Node *n, const char *name, int64_t dflt);
float rw_attr_float(const Node *n, const char *name, float dflt);

/* ---- edits ---- */
/* Make every node input reading `from` read `to` instead. */
void rw_replace_uses(PassCtx *c, int from, int to);
/* Remove the node y = f(x) that computes y as exactly x: uses of y read x.
 * If y is a graph output, x's producer writes y instead. false if neither
 * is possible (then nothing changed). */
bool rw_bypass(PassCtx *c, int node, int x, int y);
/* Mark a node dead; its inputs lose a use, its outputs become orphans. */
void rw_kill(PassCtx *c, int node);
/* A new value (a fresh unique name from hint). */
int rw_new_value(PassCtx *c, const char *hint, int dtype);
/* A new constant value holding a copy-free view of bytes (owned by the
 * arena or the model mapping). */
int rw_new_const(PassCtx *c, const char *hint, int dtype, const Shape *s, const void *bytes);
int rw_new_i64(PassCtx *c, const char *hint, const int64_t *v, int n);
/* Turn value id into a constant with these bytes (its producer is killed by
 * the caller). */
void rw_make_const(PassCtx *c, int id, int dtype, const Shape *s, const void *bytes);
/* Queue a new node before node `before`; outputs must be fresh values.
 * Attributes are copied. Returns its pending index. */
int rw_add_node(PassCtx *c, int before, const char *op_type, const int *in, int nin,
                const int *out, int nout, const Attr *attrs, int nattrs, const char *name);
/* The same for one of kiln's own fused ops (op: OP_KilnAttention, ...;
 * ops_kiln.def), in the internal domain no model can name. */
int rw_add_fused(PassCtx *c, int before, int op, const int *in, int nin, const int *out, int nout,
                 const Attr *attrs, int nattrs, const char *name);
/* Attribute builders (arena-backed). */
Attr rw_int_attr(PassCtx *c, const char *name, int64_t v);
Attr rw_float_attr(PassCtx *c, const char *name, float v);
Attr rw_ints_attr(PassCtx *c, const char *name, const int64_t *v, int n);
Attr rw_string_attr(PassCtx *c, const char *name, const char *s);
/* Set or replace an attribute of an existing node. */
void rw_set_attr(PassCtx *c, Node *n, Attr at);
/* Record that node n absorbed node `from` (n->fused.members gains
 * `Op "name"`, for the generated C's comment). */
void rw_add_member(PassCtx *c, Node *n, const Node *from);
/* Apply the dead marks and pending nodes: rebuild g->nodes in order, and
 * the use index. */
void rw_commit(PassCtx *c);
/* Set up the indexes of a fresh context (c->g set). */
void rw_init(PassCtx *c);

/* ---- the passes: each returns the number of rewrites it made ---- */
int pass_noop(PassCtx *c);
int pass_dedup(PassCtx *c);
int pass_cse(PassCtx *c);
int pass_einsum(PassCtx *c);
int pass_fold(PassCtx *c);
int pass_qdq(PassCtx *c);
int pass_lastpos(PassCtx *c);
int pass_onehot(PassCtx *c);
int pass_mlpconv(PassCtx *c);
int pass_attention(PassCtx *c);
int pass_fuse(PassCtx *c);
int pass_addnorm(PassCtx *c);
int pass_edgeconv(PassCtx *c);
int pass_convchain(PassCtx *c);
int pass_scatterrows(PassCtx *c);
int pass_dce(PassCtx *c);
int pass_ewchain(PassCtx *c);
int pass_f16(PassCtx *c);

#endif

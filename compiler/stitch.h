/*
 * stitch.h - batch independence (batchdep.c), what the runtime's batch
 * stitching needs (stitch.c), and tiles of a large batch (batchtile.c).
 */
#ifndef KILN_STITCH_H
#define KILN_STITCH_H

#include "plan.h"

/* ---- batchdep.c: batch independence ------------------------------------ */

enum { BD_NONE = -1, BD_GLOBAL = -2 };   /* value states besides a batch axis >= 0 */

typedef struct BatchDep {
	bool independent;        /* proved: no op mixes rows along the batch axis */
	bool any_batched;        /* some graph input has a batch axis */
	const char *why;         /* else the first reason, naming the node */
	int *axis;               /* per value id: batch axis, BD_NONE or BD_GLOBAL (if independent) */
	int64_t *per_sample;     /* per value id: the batch axis' extent per sample */
} BatchDep;
/* Track the batch axis through every op of the top graph at two probe batch
 * sizes of its own. Never fails: what it cannot prove is reported in why. */
void batchdep_analyse(Model *m, const BindOptions *o, BatchDep *out);

/* ---- stitch.c: what the runtime's batch stitching needs ----------------- */

typedef struct SigCost {
	uint64_t flops;          /* estimated arithmetic of one call */
	uint64_t bytes;          /* bytes its nodes read and write */
	double ns;               /* the estimate: call overhead + flops + bytes, in ns */
} SigCost;
void sig_cost(const Sig *s, SigCost *out);

typedef struct Stitch {
	BatchDep dep;
	int *axis;               /* per interface value id: the descriptor's batch axis or -1 */
	SigCost *cost;           /* per signature */
	int64_t plan_bound;
	uint64_t staging_bytes, context_bytes;
	int64_t max_arena_bytes;
	int64_t maxb;            /* the largest compiled batch size */
} Stitch;
/* Everything the descriptor and NAME_CONTEXT_BYTES need, for signatures in
 * ascending batch order and their plans. */
void stitch_build(Model *m, const Sig *sigs, const Plan *plans, int nsigs, const BindOptions *o,
                  Stitch *out);
/* The arena and context bytes again, after plans' arena_bytes changed. */
void stitch_arenas(Model *m, const Plan *plans, int nsigs, Stitch *out);

/* ---- buckets.c: one symbolic dim compiled at several values ------------- */

/* One value of a bucketed dim (kiln compile --dim SYMBOL=v1,v2,...): the
 * signatures of every batch size with the dim at that value. */
typedef struct Bucket {
	int64_t value;
	const BindOptions *bind;   /* the caller's bindings with the dim at value */
	Sig *sigs;                 /* per compiled batch size, ascending */
	Plan *plans;
	Stitch stitch;
} Bucket;
/* Per interface value id, the axis that carries the bucketed dim, or -1:
 * checked to be the same in every bucket, one axis per tensor, equal to the
 * bucket's value there, after a batch axis 0. Fails naming the tensor. */
int *buckets_axes(Model *m, const Bucket *b, int nbuckets, const char *symbol);
/* The top model's Stitch (the largest bucket's, with the largest arena and
 * staging of any bucket) and the bytes of a context for every bucket. */
void buckets_stitch(Model *m, const Bucket *b, int nbuckets, Stitch *out);

/* ---- batchtile.c: a batch size run as tiles of fewer samples ------------ */

/* The samples of one tile when batch s->batch runs best as tiles of them
 * (a divisor of it, whose activations stay in cache), 0 to run it whole. */
int64_t batch_tile(const Sig *s, const Plan *p, const Stitch *st);
/* batch_tile for each of n signatures (ascending) and their plans: tile[i]
 * is the signature of signature i's tiles (one of sigs when that size is
 * compiled, else a new one, shape-inferred and planned, shared between the
 * sizes that tile by it) and tile_plan[i] its plan, or both NULL. Whether
 * any size runs as tiles. */
bool batch_tiles(Model *m, const Sig *sigs, const Plan *plans, int n, const Stitch *st,
                 const BindOptions *o, const Sig **tile, const Plan **tile_plan);

#endif

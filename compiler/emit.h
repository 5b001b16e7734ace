/*
 * emit.h - what the C emitter takes and gives: the options naming the
 * generated model, and the constants the weights object must hold.
 */
#ifndef KILN_EMIT_H
#define KILN_EMIT_H

#include "stitch.h"

typedef struct EmitOptions {
	const char *name;        /* C prefix of every generated symbol */
	const Stitch *stitch;    /* batch axes, costs, context bytes (stitch.c) */
	const Sig *const *tile;  /* per signature: the signature of the tiles it runs as
	                            (batchtile.c), or NULL; NULL for none at all */
	const Plan *const *tile_plan;
	const char *const *rules;   /* baked batch rules, checked by the caller */
	int nrules;
	bool export_api;         /* default visibility for NAME_model and NAME_run*; else hidden */
	int trees;               /* EmitTrees: how tree ensembles are emitted (--trees) */
	bool shared_entry;       /* define kiln_shared_model(), exported (kiln compile --shared) */
	/* Buckets (compile --dim SYMBOL=v1,v2,...): the signatures are nbuckets
	 * blocks of one per batch size; stitch is the top model's (buckets.c). */
	const Bucket *buckets;
	int nbuckets;            /* 0: none */
	const char *bucket_symbol;
	const int *bucket_axis;  /* per value id (buckets_axes) */
} EmitOptions;

/* --trees: straight-line C (nested if/else per tree) or node arrays walked by
 * the runtime; auto picks by size (compiler/emit/ml.c, docs/trees.md). */
typedef enum EmitTrees { TREES_AUTO, TREES_CODE, TREES_ARRAYS } EmitTrees;

/* How a symbol stores its bytes: as they are, or repacked for a kernel. */
typedef enum SymLayout {
	SYM_RAW,
	SYM_PACK_B32,            /* a float32 GEMM B operand in the b32 layout
	                            (runtime/kernels/f32-gemm/pack.h): pack[] = K, N and
	                            the strides of element (k, n) in bytes[] */
	SYM_PACK_CONV32,         /* a float32 Conv weight in the conv32 layout
	                            (runtime/kernels/f32-conv/direct.h): pack[] = C, M,
	                            kH, kW */
	SYM_WINO1D,              /* a float32 3-tap 1-D Conv weight as its F(4, 3)
	                            filters (runtime/kernels/f32-winograd1d): pack[] =
	                            C, M, 1, 3; stores twice the weight's bytes */
	SYM_WINO2D,              /* a float32 3x3 Conv weight as its F(2x2, 3x3)
	                            filters (runtime/kernels/f32-winograd): pack[] =
	                            C, M, 3, 3; stores 16 floats for every 9 (M
	                            rounded up to 8) */
	SYM_TRANSPOSE16,         /* a 2-byte-element matrix (a float16 GEMM B^T)
	                            stored transposed: pack[] = its rows R and
	                            columns C as the model has it; stored C x R */
} SymLayout;

/* One symbol of the weights object. */
typedef struct EmitSymbol {
	const char *name;
	const void *bytes;       /* the source bytes (a weight as the model has it) */
	uint64_t nbytes;         /* stored bytes: src_nbytes in every layout but
	                            SYM_WINO1D's (twice) and SYM_WINO2D's (16 / 9) */
	uint64_t src_nbytes;     /* the source bytes' count */
	int dtype;
	uint64_t hash;
	const char *source;      /* the ONNX value it was first made for */
	SymLayout layout;
	int64_t pack[4];         /* the layout's parameters */
} EmitSymbol;

/* Writes the nbytes a symbol stores (its bytes in its layout) to dst: the
 * weights object calls it for symbols whose layout is not SYM_RAW, one at a
 * time, so no second copy of all weights ever exists. arg is the EmitSymbol. */
void emit_symbol_fill(const void *arg, void *dst);

typedef struct EmitResult {
	EmitSymbol *syms;
	int nsyms;
} EmitResult;

/* Write NAME.h to h and NAME.c to c for the signatures and their plans;
 * scratch is an empty read-write file the caller owns (and closes, also when
 * an error long-jumps out). */
void emit_c(Model *m, const Sig *sigs, const Plan *plans, int nsigs, const EmitOptions *o,
            FILE *h, FILE *c, FILE *scratch, EmitResult *res);

#endif

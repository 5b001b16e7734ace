/*
 * sig.h - batch signatures (shape.c): the binding options, a
 * signature's static shapes, types and known contents per value, and the
 * walk that infers them.
 */
#ifndef KILN_SIG_H
#define KILN_SIG_H

#include "ir.h"
#include "schema.h"

/* ---- shape.c: batch signatures and shape inference -------------------- */

typedef struct ShapeOverride {   /* --shape INPUT=d0,d1,... */
	const char *input;
	int rank;
	int64_t dims[KILN_MAX_RANK];
} ShapeOverride;

typedef struct DimValue {        /* --dim SYMBOL=V: that symbolic dim in every input */
	const char *symbol;
	int64_t value;
} DimValue;

typedef struct BatchDim {        /* --batch-dim INPUT=AXIS */
	const char *input;
	int axis;
} BatchDim;

/* An input whose values are fixed at compile time (for shapes only: the
 * generated code still reads the input). */
typedef struct Freeze {
	const char *input;
	const Tensor *value;   /* or NULL: parse text (--freeze) in the input's type */
	const char *text;      /* "v0,v1,..." */
} Freeze;
/* freeze.c: the values of `--freeze NAME=text` as a tensor of type dt. */
const Tensor *freeze_values(const char *name, int dt, const char *text, Arena *a, Diag *d);
/* freeze.c: whether test data t is small enough to freeze (verify's retries),
 * and the input a "must be known at compile time" error asks for, into name. */
bool freeze_candidate(const Tensor *t);
bool freeze_asked(const Diag *d, char *name, size_t cap);

typedef struct BindOptions {
	ShapeOverride *shapes;
	int nshapes;
	BatchDim *batch_dims;
	int nbatch_dims;
	Freeze *freezes;
	int nfreezes;
	DimValue *dims;
	int ndims;
	bool check_declared;    /* --shape must agree with the declared dims (the CLI;
	                           verify binds its data's shapes without it) */
} BindOptions;

/* Known contents of a value, for compile-time shape arithmetic. */
typedef struct Folded {
	int dtype;
	int64_t nelem;
	const void *data;    /* little-endian elements, any alignment */
} Folded;

/* One batch signature of the top graph: static shapes per value id. */
typedef struct Sig {
	int64_t batch;
	int64_t bucket;      /* the value of a bucketed dim (compile --dim SYMBOL=v1,v2,...)
	                        this signature is for, or 0: not bucketed */
	Graph *g;
	Shape *shapes;       /* per value id */
	int *dtypes;         /* per value id */
	Folded **folded;     /* per value id, NULL if the contents are not known */
	struct Control **control; /* per node id: an If/Loop/Scan's subgraph signatures
	                             (compiler/control.h), else NULL */
	bool *dead;          /* per node index: read by nothing that runs (sigdce.c), or
	                        NULL (none, or not analysed) */
	bool no_chains;      /* elementwise chains run node by node here: in one loop
	                        they would make the arena larger (sigdce.c) */
	Arena *a;
} Sig;

/* What an op's inference hook sees. */
typedef struct Infer {
	Sig *sig;
	Graph *g;
	Node *n;
	Diag *d;
	Arena *a;
	/* The walk that runs the hooks (shape_infer_nodes), handed down so an
	 * If/Loop/Scan hook infers its bodies with it (subgraph_infer) without
	 * calling back up into shape.c; NULL outside shape inference. */
	void (*infer_nodes)(Sig *s, Diag *d);
	/* Evaluates value id on demand when a hook requires it unfolded
	 * (infer_required): shape inference hands peval_demand; NULL elsewhere,
	 * where only what is folded already is known. */
	const struct Folded *(*demand)(struct Infer *x, int id);
} Infer;
typedef void (*InferHook)(Infer *x);

/* Bind inputs (sig->g, sig->batch set by the caller) and infer every value;
 * errors name the tensor, node and dim. */
void shape_infer(Sig *s, const BindOptions *o, Arena *a, Diag *d);
/* The two halves of shape_infer around binding, for subgraphs (subgraph.c):
 * allocate the per-value arrays (weights get their shapes), then run every
 * node's hook in order. */
void shape_sig_init(Sig *s, Arena *a);
void shape_infer_nodes(Sig *s, Diag *d);
/* shape.c: the --shape flag that fixes input v, N on batch_axis (-1: its first symbolic dim). */
const char *shape_flag(Arena *a, const Value *v, int batch_axis);
/* infer.c: */
/* NULL if a tensor of this shape is within the limits, else what is wrong. */
const char *shape_size_problem(const Shape *s, const Limits *l, char *buf, size_t size);

#endif

/*
 * emit/emitter.h - what an op emitter works with: the emitter's state for
 * one graph at one signature (Emit), the operands it reads and writes, and
 * the small descriptions two emitters share (an elementwise chain, a
 * MatMul's geometry). The functions over them are declared in emit_c.h.
 */
#ifndef KILN_EMIT_EMITTER_H
#define KILN_EMIT_EMITTER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "emit.h"
#include "ops/ops.h"
#include "plan.h"

typedef struct Emit {
	Model *m;
	Graph *g;
	Diag *d;
	Arena *a;
	const EmitOptions *o;
	FILE *c;
	const Sig *sig;
	const Plan *plan;
	int *in_index, *out_index;   /* value id -> position in the run arrays, or NONE */
	const char **iface;          /* value id -> its parameter name ("in_x", "out_y_2"), or NULL */
	EmitSymbol *syms;
	int nsyms, capsyms;
	int *sym_of_weight;          /* value id -> symbol, for initializers (all signatures) */
	Node *n;                     /* the node being emitted, for errors */
	struct Emit *parent;         /* a subgraph's: the enclosing graph's emitter, else NULL */
	const char *fn_prefix;       /* a subgraph's function name prefix, else NULL ("b8") */
	/* Shared node functions (large graphs, emit_c.c): while `templating`,
	 * operands are written as slot[k] and where they live is recorded. */
	bool templating;
	struct EmitSlot *slots;
	int nslots, capslots;
	struct EmitTemplate *tmpls;
	int ntmpls, captmpls;
	FILE *tfile;                 /* where a template body is written first (tracked) */
	/* Per value of gemm_uses_of: how many node inputs read it, and how many
	 * as a GEMM's B untransposed / transposed / transposed by a float32-A
	 * Gemm (a float16 weight, emit/linalg.c), counted once per graph rather
	 * than for every GEMM. */
	const Graph *gemm_uses_of;
	int *uses_all, *uses_as_b[3];
	/* The graph emitter's walks (emit/nodes.c: emit_graph_functions and
	 * emit_graph_calls), handed down so that the control-flow emitters
	 * (emit/control.c) write a body's node functions and their calls
	 * without calling back up into nodes.c. A child emitter copies them. */
	void (*graph_functions)(struct Emit *E);
	void (*graph_calls)(struct Emit *E, const char *indent);
} Emit;

/* Where a templated node's operand k lives (see "shared node functions"). */
enum { SLOT_ARENA, SLOT_IN, SLOT_OUT, SLOT_CONST };
typedef struct EmitSlot {
	int kind;            /* SLOT_* */
	int64_t off;         /* arena offset, or input/output index */
	const char *sym;     /* SLOT_CONST: the weights symbol */
} EmitSlot;

/* A value as the generated code sees it. */
typedef struct Operand {
	const char *expr;    /* a C expression of type `T *` or `const T *` */
	int dtype;
	const Shape *shape;
	int64_t nelem;
} Operand;

enum { MAX_MAP_OPERANDS = 8 };

/* An elementwise chain (passes/ewchain.c) at E->sig: its nodes in order
 * (ids, the last one last) and the values it reads from outside, once each. */
typedef struct EwChain {
	int *nodes, nnodes;
	int ext[EWCHAIN_MAX_OPERANDS], next;
} EwChain;

typedef struct MatmulGeo {
	int64_t M, K, N, nb;   /* nb batch matrices of M x K times K x N */
	Shape ob, ab, bb;      /* batch dims of the output and of A and B */
} MatmulGeo;

#endif

/*
 * emit.h - what the C emitter takes and gives: the options naming the
 * generated model, and the constants the weights object must hold.
 */
#ifndef KILN_EMIT_H
#define KILN_EMIT_H

#include "kiln.h"

typedef struct EmitOptions {
	const char *name;        /* C prefix of every generated symbol */
	const Stitch *stitch;    /* batch axes, costs, context bytes (stitch.c) */
	const char *const *rules;   /* baked batch rules, checked by the caller */
	int nrules;
	bool export_api;         /* default visibility for NAME_model and NAME_run*; else hidden */
} EmitOptions;

/* One symbol of the weights object. */
typedef struct EmitSymbol {
	const char *name;
	const void *bytes;
	uint64_t nbytes;
	int dtype;
	uint64_t hash;
	const char *source;      /* the ONNX value it was first made for */
} EmitSymbol;

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

/*
 * padproof.h - padding on a symbolic inner dim proven harmless (padproof.c):
 * the sibling of batchdep.c's batch independence on another axis.
 */
#ifndef KILN_PADPROOF_H
#define KILN_PADPROOF_H

#include "sig.h"

typedef struct PadOptions {
	const char *symbol;        /* the padded dim, as named in the inputs ("n_pf") */
	const int64_t *buckets;    /* the sizes it is compiled at (at least one) */
	int nbuckets;
	const char *const *masks;  /* --mask INPUT: the mask inputs; none given: every input
	                              carrying the dim whose name contains "mask" */
	int nmasks;
} PadOptions;

typedef struct PadCheck {
	bool proven;               /* padding cannot change the outputs at real positions */
	const char *why;           /* else the first node where it may, with the reason */
	int64_t minimum;           /* the smallest bucket the proof holds for (TopK's k), 1 if none */
	int nmask_inputs;          /* inputs treated as masks */
	const char *masks;         /* their names, comma-separated ("" if none) */
} PadCheck;

/* Analyse the graph (as loaded, before the optimizer) at batch 1 and two
 * probe sizes of the dim (the two smallest buckets, or B and B + 1).
 * Never fails for a model it cannot prove: the reason is in why. Fails
 * (diag) on bad options: an unknown symbol or mask, shapes that do not
 * infer at a bucket. */
void pad_check(Model *m, const BindOptions *o, const PadOptions *po, PadCheck *out);

#endif

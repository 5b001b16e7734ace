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

/* Is the input of that name a mask (PadOptions.masks; none given: the name
 * contains "mask", any case)? For inputs carrying the dim. */
bool pad_is_mask(const PadOptions *po, const char *name);

/* Analyse the graph (as loaded, before the optimizer) at batch 1 and two
 * probe sizes of the dim (the largest bucket B and 2B).
 * Never fails for a model it cannot prove: the reason is in why. Fails
 * (diag) on bad options: an unknown symbol or mask, shapes that do not
 * infer at a bucket. */
void pad_check(Model *m, const BindOptions *o, const PadOptions *po, PadCheck *out);

/* padtest.c: the check by evaluation, for what the rules cannot prove. The
 * model (reloaded from m->path for each size) is compiled at batch 1 and
 * each bucket size and each of a few exact lengths L (1, half the smallest
 * bucket, the smallest bucket, between it and the largest), run on inputs
 * that are the same at every real position whatever the size (0 and mask 0
 * at padded ones), and every output at real positions compared: |a - b|
 * <= 1e-6 + 1e-4 |b|. True if they agree; else *why says where they do
 * not. *tested: the lengths and sizes compared. */
bool pad_evaluate(Model *m, const BindOptions *o, const PadOptions *po, const char **why,
                  const char **tested);

#endif

/*
 * compile.h - the compile driver shared by `kiln compile` and `kiln verify`.
 */
#ifndef KILN_COMPILE_H
#define KILN_COMPILE_H

#include "kiln.h"

typedef struct CompileOptions {
	const char *name;          /* C prefix; NULL: from the model's file name */
	const char *outdir;        /* NULL: "." */
	const char *target;        /* LLVM triple; NULL: the host */
	const int64_t *batches;
	int nbatches;
	const BindOptions *bind;
	bool shared;               /* build NAME.so with libkiln (kiln verify) instead of NAME.o */
	int opt_level;             /* the C compiler's -O level */
	const struct PassOptions *passes;   /* the optimizer; NULL: every pass (passes/passes.h) */
	struct PassReport *pass_report;     /* if not NULL, what the passes did */
	const char *const *rules;  /* --batch-rule B:s1,...: baked into the descriptor */
	int nrules;
	bool export_api;           /* --export: NAME_model and NAME_run* visible outside a
	                              shared library (always for shared) */
	bool no_cc;                /* --no-cc: stop after NAME.h, NAME.c, NAME_weights.o */
	int trees;                 /* --trees: EmitTrees (emit.h) */
	/* If not NULL, called after each stage (the CLI reports long compiles). */
	void (*stage)(void *ud, const char *what);
	void *stage_ud;
} CompileOptions;

typedef struct CompileResult {
	const char *name;
	const char *h_path, *c_path, *weights_path;
	const char *o_path;        /* NULL for a cross target */
	const char *so_path;       /* with shared */
	uint64_t weight_bytes;     /* bytes in the weights object */
	int nsymbols;
	int64_t arena_bytes;       /* the largest signature's */
	uint64_t context_bytes;    /* one kiln_run context (NAME_CONTEXT_BYTES) */
	bool batch_independent;    /* kiln_run may stitch any batch size */
	const char *batch_mixing;  /* else why not, naming the node */
} CompileResult;

void compile_model(Model *m, const CompileOptions *o, CompileResult *res);
/* compile_model's stages before it writes anything: the optimizer, then per
 * batch size (sorted; the array returned) shape inference, the nodes dead at
 * that signature and the buffer plan. `kiln check --batch` runs exactly
 * these, so a model it passes does not fail compile on a shape or a plan. */
const int64_t *compile_signatures(Model *m, const CompileOptions *o, Sig **sigs, Plan **plans);

typedef struct VerifyOptions {
	int64_t batch;             /* 0: from the data set's first input */
	int opt_level;
	bool keep;                 /* keep the temporary build folders */
	size_t max_memory_bytes;
	const struct PassOptions *passes;   /* as for compile; NULL: every pass */
	int trees;                 /* --trees: EmitTrees (emit.h) */
} VerifyOptions;

/* Verify each case folder; prints one line per case and a summary line.
 * Returns 0 if every case passed. */
int verify_run(const VerifyOptions *vo, char **dirs, int ndirs, FILE *out);
const char *compile_include_dir(Arena *a);
const char *compile_runtime_lib(Arena *a);
/* Open a file (NULL path: a temporary one) that the Model closes if an error
 * long-jumps; compile_close closes it normally and reports write errors. */
FILE *compile_open(Model *m, const char *path, const char *mode);
void compile_close(Model *m, FILE *f, const char *path);

#endif

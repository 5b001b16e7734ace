/*
 * compile.h - the compile driver shared by `kiln compile` and `kiln verify`.
 */
#ifndef KILN_COMPILE_H
#define KILN_COMPILE_H

#include "plan.h"

struct PadOptions;   /* padproof.h */

typedef struct CompileOptions {
	const char *name;          /* C prefix; NULL: from the model's file name */
	const char *outdir;        /* NULL: "." */
	const char *target;        /* LLVM triple; NULL: the host */
	const int64_t *batches;
	int nbatches;
	const BindOptions *bind;
	bool shared;               /* build NAME.so with libkiln (kiln verify, kiln compile
	                              --shared) instead of NAME.o */
	int opt_level;             /* the C compiler's -O level */
	const struct PassOptions *passes;   /* the optimizer; NULL: every pass (passes/passes.h) */
	struct PassReport *pass_report;     /* if not NULL, what the passes did */
	const char *const *rules;  /* --batch-rule B:s1,...: baked into the descriptor */
	int nrules;
	bool export_api;           /* --export: NAME_model and NAME_run* visible outside a
	                              shared library (always for shared) */
	bool no_cc;                /* --no-cc: stop after NAME.h, NAME.c, NAME_weights.o */
	const char *depfile;       /* --depfile: make rule naming the files read; NULL: none */
	uint64_t max_weight_bytes; /* --max-weights; 0: the default (compile_max_weights) */
	int trees;                 /* --trees: EmitTrees (emit.h) */
	const char *bucket_symbol; /* --dim SYMBOL=v1,v2,...: compiled at each value (buckets,
	                              kiln_run_lengths); with nbuckets < 2, none */
	const int64_t *bucket_values;   /* ascending */
	int nbuckets;
	const char *const *masks;  /* --mask INPUT: the bucketed dim's mask inputs (padproof.h) */
	int nmasks;
	/* padtest.c's pad_evaluate, for buckets the padding rules cannot prove.
	 * It compiles the model again, so compile.c does not call it by name
	 * (that would be a circle); the CLI hands it in. NULL: such a model is
	 * refused. */
	bool (*evaluate_padding)(Model *m, const BindOptions *o, const struct PadOptions *po,
	                         const char **why, const char **tested);
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
 * that signature and the buffer plan; with buckets, per bucket (ascending)
 * and batch size, nbuckets * nbatches signatures, bucket by bucket. `kiln check --batch` runs exactly
 * these, so a model it passes does not fail compile on a shape or a plan. */
const int64_t *compile_signatures(Model *m, const CompileOptions *o, Sig **sigs, Plan **plans);
/* compile_model up to and including code generation, writing nothing:
 * `kiln check --batch` (fails as compile would, but for the C compiler). */
void compile_check(Model *m, const CompileOptions *o);

typedef struct VerifyOptions {
	int64_t batch;             /* 0: from the data set's first input */
	int opt_level;
	bool keep;                 /* keep the temporary build folders */
	size_t max_memory_bytes;
	const struct PassOptions *passes;   /* as for compile; NULL: every pass */
	int trees;                 /* --trees: EmitTrees (emit.h) */
	bool zipmap_tensor;        /* --zipmap=tensor (ops/ml.c) */
	bool winograd;             /* --winograd (ops/conv_algo.c) */
	double rtol, atol;         /* --tolerance; rtol < 0: 1e-3, 1e-5 and 16-bit floats bit
	                            * for bit; else every float type within atol + rtol |want| */
	bool reproducible;         /* --reproducible: reproduce.c */
	const int64_t *batches;    /* --reproducible: the sizes to compile */
	int nbatches;
} VerifyOptions;

/* Verify each case folder; prints one line per case and a summary line.
 * Returns 0 if every case passed. */
int verify_run(const VerifyOptions *vo, char **dirs, int ndirs, FILE *out);
/* reproduce.c: `kiln verify --reproducible`, the same bits under every ISA,
 * batch size and stitching, and on aarch64; one line per check, a verdict
 * per case. Returns 0 if every case is reproducible, 1 if one differs, 2 if
 * one could not be checked. */
int reproduce_run(const VerifyOptions *vo, char **paths, int npaths, FILE *out);
const char *compile_include_dir(Arena *a);
/* $VAR (or dflt) split on blanks into argv (CC may be "ccache gcc"); the count. */
int compile_tool_argv(Arena *a, const char *var, const char *dflt, const char **argv, int max);
/* outputs.c: remove a temporary build folder and what it holds, never
 * following a link (best effort). */
void compile_remove_tree(const char *dir);
const char *compile_runtime_lib(Arena *a);
/* Open a file (NULL path: a temporary one) that the Model closes if an error
 * long-jumps; compile_close closes it normally and reports write errors. */
FILE *compile_open(Model *m, const char *path, const char *mode);
void compile_close(Model *m, FILE *f, const char *path);
/* The default of --max-weights: 256 MiB plus 4 x the bytes of the model and
 * external-data files read (docs/limits.md). */
uint64_t compile_max_weights(const Model *m);

/* outputs.c: every file compile writes goes to a staging folder and is
 * renamed into the output folder only by outputs_commit (see there). */
typedef struct Outputs Outputs;
/* Create the staging folder dir/.name.kiln-XXXXXX and the cleaner. */
void outputs_begin(Model *m, const char *dir, const char *name);
/* A new file named base in the staging folder (*tmp), opened
 * O_EXCL|O_NOFOLLOW; *final is its name in the output folder. */
FILE *outputs_open(Model *m, const char *base, const char **final, const char **tmp);
/* The staging path of base, for a tool to write (keep: renamed on commit;
 * last: renamed after every other file). */
const char *outputs_stage_path(Model *m, const char *base, bool keep, bool last);
/* A temporary beside final (anywhere), renamed to it on commit. */
FILE *outputs_open_beside(Model *m, const char *final);
/* A tool's process group started (group > 0) or ended (0). */
void outputs_tool(Model *m, long group);
/* Rename everything into place under the output folder's lock. */
void outputs_commit(Model *m);

#endif

/*
 * test_loader.c - the ONNX loader and IR on the fixtures of tests/fixtures
 * (see its README for what each holds): decoded values of every element type
 * and storage form, external data, outer-scope references, opsets, weight
 * statistics; and for each malformed or hostile input, the exact status and
 * the words of its message. Ends with a truncation and byte-corruption sweep
 * that must never crash (run it under ASan to make that mean something).
 *
 * usage: test_loader FIXTURE_DIR
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "kiln.h"

static const char *fixdir;
static char tmpdir[256];

/* One load in its own arena and protected call. */
typedef struct Loaded {
	Diag diag;
	Arena arena;
	Model *model;
	enum kiln_status status;
} Loaded;

static void load_into(Loaded *l, const char *path, size_t cap_bytes)
{
	memset(l, 0, sizeof *l);
	l->diag.file = path;
	arena_init(&l->arena, cap_bytes, &l->diag);
	jmp_buf jb;
	l->diag.protect = &jb;
	Model *volatile m = NULL;
	if (setjmp(jb) == 0) {
		m = model_new(path, &l->arena, &l->diag);
		model_load(m);
		l->status = KILN_OK;
	} else {
		l->status = l->diag.status;
	}
	l->model = m;
	l->diag.protect = NULL;
}

static void unload(Loaded *l)
{
	model_close(l->model);
	arena_free(&l->arena);
}

static char *fixture(const char *name)
{
	static char buf[4][1024];
	static int k;
	char *p = buf[k++ & 3];
	snprintf(p, 1024, "%s/%s", fixdir, name);
	return p;
}

static Model *load_ok(Loaded *l, const char *name)
{
	load_into(l, fixture(name), (size_t)1 << 30);
	if (l->status != KILN_OK)
		fprintf(stderr, "unexpected error: %s\n", l->diag.msg);
	CHECK_EQ_INT(KILN_OK, l->status);
	if (l->status == KILN_OK)
		ir_verify(l->model->graph);
	return l->status == KILN_OK ? l->model : NULL;
}

static void expect_error_at(const char *path, enum kiln_status st, const char *words)
{
	Loaded l;
	load_into(&l, path, (size_t)1 << 30);
	CHECK_EQ_INT(st, l.status);
	if (!strstr(l.diag.msg, words) || strncmp(l.diag.msg, path, strlen(path)) != 0) {
		check_failures++;
		fprintf(stderr, "%s: message \"%s\" lacks the path or \"%s\"\n", path, l.diag.msg,
		        words);
	}
	CHECK(strchr(l.diag.msg, '\n') == NULL);
	unload(&l);
}

static void expect_error(const char *name, enum kiln_status st, const char *words)
{
	expect_error_at(fixture(name), st, words);
}

static int find_value(const Graph *g, const char *name)
{
	for (int i = 0; i < g->nvalues; i++)
		if (strcmp(g->values[i].name, name) == 0)
			return i;
	return NONE;
}

static const Value *value(const Graph *g, const char *name)
{
	int id = find_value(g, name);
	CHECK(id != NONE);
	return id == NONE ? &g->values[0] : &g->values[id];
}

/* ---- valid models ------------------------------------------------------ */

static void test_mlp(void)
{
	Loaded l;
	Model *m = load_ok(&l, "mlp.onnx");
	if (!m)
		return;
	Graph *g = m->graph;
	CHECK_EQ_INT(8, m->ir_version);
	CHECK_STR("kiln-fixtures", m->producer_name);
	CHECK_EQ_INT(1, m->nopsets);
	CHECK_EQ_INT(13, m->opsets[0].version);
	CHECK_EQ_INT(3, g->nnodes);
	CHECK_EQ_INT(4, g->ninitializers);
	CHECK_EQ_INT(1, g->ninputs);
	CHECK_EQ_INT(1, g->noutputs);
	CHECK_STR("Gemm", g->nodes[0].op_type);
	CHECK_STR("fc1", g->nodes[0].name);
	CHECK_EQ_INT(13, g->nodes[0].since);
	CHECK_EQ_INT(13, g->nodes[1].since);  /* Relu-13 */
	CHECK_EQ_INT(1, g->nodes[0].nattrs);
	CHECK_STR("transB", g->nodes[0].attrs[0].name);
	CHECK_EQ_INT(AT_INT, g->nodes[0].attrs[0].type);
	CHECK_EQ_INT(1, g->nodes[0].attrs[0].i);

	const Value *x = &g->values[g->inputs[0]];
	CHECK_STR("x", x->name);
	CHECK_EQ_INT(VAL_INPUT, x->kind);
	CHECK_EQ_INT(DT_FLOAT, x->dtype);
	CHECK_EQ_INT(2, x->shape.rank);
	CHECK_STR("N", x->shape.dims[0].param);
	CHECK_EQ_INT(-1, x->shape.dims[0].size);
	CHECK_EQ_INT(4, x->shape.dims[1].size);
	/* value_info gave the intermediate its shape. */
	const Value *h = value(g, "h");
	CHECK_EQ_INT(0, h->producer);
	CHECK_EQ_INT(2, h->shape.rank);
	CHECK_EQ_INT(8, h->shape.dims[1].size);
	CHECK_EQ_INT(1, h->nuse);

	const Value *w1 = value(g, "W1");
	CHECK_EQ_INT(VAL_WEIGHT, w1->kind);
	CHECK_EQ_INT(128, w1->weight->nbytes);
	CHECK_EQ_INT(32, w1->weight->nelem);
	CHECK(w1->weight->is_mapped);  /* 128 bytes of raw_data: left in the mapping */
	uint32_t bits[32];
	memcpy(bits, w1->weight->bytes, sizeof bits);
	CHECK_EQ_INT(0x3fe1cc78u, bits[0]);
	CHECK_EQ_INT(0x3ec19e85u, bits[31]);
	const Value *b2 = value(g, "b2");
	memcpy(bits, b2->weight->bytes, 12);
	CHECK_EQ_INT(0x3e35af33u, bits[0]);
	CHECK_EQ_INT(0xbfd0aa57u, bits[2]);
	CHECK(!b2->weight->is_mapped || b2->weight->nbytes >= 64);

	WeightStats ws;
	weight_stats(m, &ws);
	CHECK_EQ_INT(4, ws.ninitializers);
	CHECK_EQ_INT(268, ws.weight_bytes);
	CHECK_EQ_INT(268, ws.unique_bytes);
	unload(&l);
}

static const char *const type_names[DT_COUNT] = {
	NULL, "float", "uint8", "int8", "uint16", "int16", "int32", "int64", "string",
	"bool", "float16", "double", "uint32", "uint64", "complex64", "complex128", "bfloat16",
};

static void test_all_dtypes(void)
{
	Loaded l;
	Model *m = load_ok(&l, "all_dtypes.onnx");
	if (!m)
		return;
	Graph *g = m->graph;
	CHECK_EQ_INT(31, g->ninitializers);
	CHECK_EQ_INT(32, g->noutputs);
	/* The fixture holds onnx 1.12's types (through bfloat16); float8 initializers
	 * are tested by tests/opset/newops.py. */
	for (int dt = 1; dt <= DT_BFLOAT16; dt++) {
		char name[64];
		snprintf(name, sizeof name, "typed_%s", type_names[dt]);
		const Value *typed = value(g, name);
		CHECK_EQ_INT(dt, typed->dtype);
		CHECK_EQ_INT(3, typed->weight->nelem);
		if (dt == DT_STRING) {
			const WeightString *s = typed->weight->bytes;
			CHECK(s[0].len == 1 && memcmp(s[0].data, "a", 1) == 0);
			CHECK(s[1].len == 2 && memcmp(s[1].data, "bc", 2) == 0);
			CHECK_EQ_INT(0, s[2].len);
			continue;
		}
		snprintf(name, sizeof name, "raw_%s", type_names[dt]);
		const Value *raw = value(g, name);
		CHECK_EQ_INT(dt, raw->dtype);
		CHECK_EQ_INT(3 * dtype_size(dt), raw->weight->nbytes);
		CHECK_EQ_INT(raw->weight->nbytes, typed->weight->nbytes);
		if (memcmp(raw->weight->bytes, typed->weight->bytes, raw->weight->nbytes) != 0) {
			check_failures++;
			fprintf(stderr, "raw and typed %s decode differently\n", type_names[dt]);
		}
	}
	uint16_t h[3];
	memcpy(h, value(g, "typed_float16")->weight->bytes, 6);
	CHECK(h[0] == 0x3c00 && h[1] == 0x4000 && h[2] == 0x4200);
	memcpy(h, value(g, "typed_bfloat16")->weight->bytes, 6);
	CHECK(h[0] == 0x3f80 && h[1] == 0x4000 && h[2] == 0x4040);
	const uint8_t *b = value(g, "typed_bool")->weight->bytes;
	CHECK(b[0] == 1 && b[1] == 0 && b[2] == 1);
	double c[6];
	memcpy(c, value(g, "typed_complex128")->weight->bytes, sizeof c);
	CHECK(c[0] == 1 && c[1] == 2 && c[5] == 6);
	int64_t i64[3];
	memcpy(i64, value(g, "raw_int64")->weight->bytes, sizeof i64);
	CHECK(i64[0] == 1 && i64[2] == 3);
	/* Graph outputs may name initializers. */
	CHECK(value(g, "raw_float")->is_output);
	unload(&l);
}

static void test_typed_large(void)
{
	Loaded l;
	Model *m = load_ok(&l, "typed_large.onnx");
	if (!m)
		return;
	const Value *f = value(m->graph, "f"), *d = value(m->graph, "d"), *i = value(m->graph, "i");
	CHECK(f->weight->is_mapped);
	CHECK(d->weight->is_mapped);
	float fv[32];
	double dv[16];
	int64_t iv[16];
	memcpy(fv, f->weight->bytes, sizeof fv);
	memcpy(dv, d->weight->bytes, sizeof dv);
	memcpy(iv, i->weight->bytes, sizeof iv);
	CHECK(fv[0] == 0.0f && fv[31] == 31.0f);
	CHECK(dv[1] == 0.5 && dv[15] == 7.5);
	CHECK(iv[0] == -8 && iv[15] == 7);
	unload(&l);
}

static void test_constant_node(void)
{
	Loaded l;
	Model *m = load_ok(&l, "constant_node.onnx");
	if (!m)
		return;
	Graph *g = m->graph;
	CHECK_EQ_INT(5, g->nnodes);
	const Node *c = &g->nodes[0];
	CHECK_STR("Constant", c->op_type);
	CHECK_EQ_INT(AT_TENSOR, c->attrs[0].type);
	const Tensor *t = &c->attrs[0].tensors[0];
	CHECK_EQ_INT(DT_FLOAT, t->dtype);
	CHECK_EQ_INT(1, t->shape.rank);
	float v[3];
	memcpy(v, t->w.bytes, sizeof v);
	CHECK(v[0] == 1 && v[1] == 2 && v[2] == 3);
	CHECK_EQ_INT(AT_FLOAT, g->nodes[1].attrs[0].type);
	CHECK(g->nodes[1].attrs[0].f == 0.5f);
	CHECK_EQ_INT(AT_INTS, g->nodes[2].attrs[0].type);
	CHECK_EQ_INT(2, g->nodes[2].attrs[0].n);
	CHECK_EQ_INT(3, g->nodes[2].attrs[0].ints[1]);
	CHECK(value(g, "shape")->is_output);
	WeightStats ws;
	weight_stats(m, &ws);
	CHECK_EQ_INT(1, ws.nconstants);
	CHECK_EQ_INT(12, ws.weight_bytes);
	unload(&l);
}

static void test_input_is_initializer(void)
{
	Loaded l;
	Model *m = load_ok(&l, "input_is_initializer.onnx");
	if (!m)
		return;
	Graph *g = m->graph;
	CHECK_EQ_INT(2, g->ninputs);
	const Value *b = value(g, "b");
	CHECK_EQ_INT(VAL_WEIGHT, b->kind);
	CHECK(b->is_overridable);
	CHECK_EQ_INT(VAL_INPUT, value(g, "x")->kind);
	unload(&l);
}

static void test_external(void)
{
	Loaded l;
	Model *m = load_ok(&l, "external/model.onnx");
	if (!m)
		return;
	Graph *g = m->graph;
	float v[4];
	const Value *w0 = value(g, "w0"), *w1 = value(g, "w1"), *w2 = value(g, "w2");
	memcpy(v, w0->weight->bytes, 16);
	CHECK(v[0] == 1 && v[3] == 4);
	memcpy(v, w1->weight->bytes, 8);
	CHECK(v[0] == 5 && v[1] == 6);
	memcpy(v, w2->weight->bytes, 8);
	CHECK(v[0] == 7 && v[1] == 8);
	CHECK_STR("sub/more.bin", w2->weight->location);
	CHECK(w0->weight->is_mapped);
	WeightStats ws;
	weight_stats(m, &ws);
	CHECK_EQ_INT(3, ws.nexternal);
	CHECK_EQ_INT(32, ws.weight_bytes);
	unload(&l);
}

static void test_subgraphs(void)
{
	Loaded l;
	Model *m = load_ok(&l, "if_outer.onnx");
	if (m) {
		Graph *g = m->graph;
		const Node *n = &g->nodes[0];
		CHECK_STR("If", n->op_type);
		Graph *then_g = NULL, *else_g = NULL;
		for (int i = 0; i < n->nattrs; i++) {
			if (strcmp(n->attrs[i].name, "then_branch") == 0)
				then_g = n->attrs[i].graphs[0];
			if (strcmp(n->attrs[i].name, "else_branch") == 0)
				else_g = n->attrs[i].graphs[0];
		}
		CHECK(then_g && else_g);
		if (then_g && else_g) {
			CHECK(then_g->parent == g);
			const Value *xo = value(then_g, "x"), *wo = value(then_g, "W");
			CHECK_EQ_INT(VAL_OUTER, xo->kind);
			CHECK_EQ_INT(find_value(g, "x"), xo->outer_id);
			CHECK_EQ_INT(VAL_OUTER, wo->kind);
			CHECK_EQ_INT(find_value(g, "W"), wo->outer_id);
			CHECK_EQ_INT(VAL_OUTER, value(else_g, "Wr")->kind);
			CHECK_STR("MatMul", then_g->nodes[0].op_type);
		}
		/* x is read by both branches; the weights once each. */
		CHECK_EQ_INT(2, value(g, "x")->nuse);
		CHECK_EQ_INT(1, value(g, "W")->nuse);
		unload(&l);
	}
	m = load_ok(&l, "loop.onnx");
	if (m) {
		Graph *body = m->graph->nodes[0].attrs[0].graphs[0];
		CHECK_EQ_INT(3, body->ninputs);
		CHECK_EQ_INT(VAL_OUTER, value(body, "step")->kind);
		unload(&l);
	}
	m = load_ok(&l, "scan.onnx");
	if (m) {
		CHECK_EQ_INT(11, m->opsets[0].version);
		CHECK_EQ_INT(11, m->graph->nodes[0].since);  /* Scan-11 */
		unload(&l);
	}
}

static void test_domains_and_check(void)
{
	Loaded l;
	char reason[256];
	Model *m = load_ok(&l, "ml_domain.onnx");
	if (m) {
		const Node *n = &m->graph->nodes[0];
		CHECK_EQ_INT(DOMAIN_ML, n->domain_id);
		CHECK(n->op != NONE);
		CHECK_EQ_INT(1, n->since);
		/* ai.onnx.ml's Normalizer is compiled (ops/ml.c). */
		CHECK(op_unsupported_reason(m->graph, n, reason, sizeof reason) == NULL);
		unload(&l);
	}
	m = load_ok(&l, "custom_domain.onnx");
	if (m) {
		const Node *n = &m->graph->nodes[0];
		CHECK_EQ_INT(DOMAIN_OTHER, n->domain_id);
		CHECK_EQ_INT(NONE, n->op);
		const char *r = op_unsupported_reason(m->graph, n, reason, sizeof reason);
		CHECK(r && strstr(r, "com.example"));
		CHECK(op_unsupported_reason(m->graph, &m->graph->nodes[1], reason, sizeof reason) == NULL);
		unload(&l);
	}
	m = load_ok(&l, "unsupported.onnx");
	if (m) {
		Graph *g = m->graph;
		CHECK(op_unsupported_reason(g, &g->nodes[0], reason, sizeof reason) == NULL);
		CHECK(op_unsupported_reason(g, &g->nodes[1], reason, sizeof reason) != NULL);
		CHECK(op_unsupported_reason(g, &g->nodes[2], reason, sizeof reason) != NULL);
		unload(&l);
	}
}

static void test_dup_weights(void)
{
	Loaded l;
	Model *m = load_ok(&l, "dup_weights.onnx");
	if (!m)
		return;
	WeightStats ws;
	weight_stats(m, &ws);
	CHECK_EQ_INT(4, ws.ninitializers);
	CHECK_EQ_INT(4096, ws.weight_bytes);
	CHECK_EQ_INT(3072, ws.unique_bytes);  /* b == a; d has a's bytes but another dtype */
	unload(&l);
}

static void test_registry(void)
{
	int add = op_lookup("Add", DOMAIN_ONNX);
	CHECK(add != NONE);
	CHECK_EQ_INT(7, op_resolve(add, 12));
	CHECK_EQ_INT(14, op_resolve(add, 17));
	CHECK_EQ_INT(1, op_resolve(add, 1));
	CHECK_EQ_INT(NONE, op_lookup("Add", DOMAIN_ML));
	CHECK_EQ_INT(NONE, op_lookup("NoSuchOp", DOMAIN_ONNX));
	int hs = op_lookup("HardSwish", DOMAIN_ONNX);
	CHECK_EQ_INT(0, op_resolve(hs, 13));  /* HardSwish is new in opset 14 */
	CHECK_EQ_INT(17, op_max_opset(DOMAIN_ONNX) >= 17 ? 17 : 0);
	CHECK_EQ_INT(DOMAIN_ONNX, domain_lookup("ai.onnx"));
	CHECK_EQ_INT(DOMAIN_OTHER, domain_lookup("com.microsoft"));
}

/* ---- bad models -------------------------------------------------------- */

static void test_malformed(void)
{
	expect_error("bad_empty.onnx", KILN_INVALID_MODEL, "empty file");
	expect_error("bad_truncated.onnx", KILN_INVALID_MODEL, "truncated");
	expect_error("bad_not_onnx.onnx", KILN_INVALID_MODEL, "not a valid ONNX file");
	expect_error("bad_bad_wire.onnx", KILN_INVALID_MODEL, "not a valid ONNX file");
	expect_error("bad_dtype.onnx", KILN_INVALID_MODEL,
	             "initializer \"W1\" has unknown element type 99");
	expect_error("bad_dup_output.onnx", KILN_INVALID_MODEL,
	             "node 1 \"second\" (Sigmoid, ai.onnx opset 13): output \"h\" is already "
	             "produced by node 0 \"first\"");
	expect_error("bad_undefined_input.onnx", KILN_INVALID_MODEL,
	             "node 0 \"use\" (Add, ai.onnx opset 13): input 1 \"ghost\" is not defined");
	expect_error("bad_raw_size.onnx", KILN_INVALID_MODEL,
	             "initializer \"w\" has 12 bytes of raw_data but its shape and type need 16");
	expect_error("bad_negative_dim.onnx", KILN_INVALID_MODEL,
	             "initializer \"w\" has negative dimension -2");
	expect_error("bad_no_graph.onnx", KILN_INVALID_MODEL, "no graph");
	expect_error("no_such_file.onnx", KILN_IO, "cannot open");
	expect_error("external", KILN_IO, "not a regular file");
	expect_error("ext_absolute.onnx", KILN_INVALID_MODEL, "\"/etc/hostname\" is an absolute path");
	expect_error("ext_dotdot.onnx", KILN_INVALID_MODEL, "contains \"..\"");
	expect_error("ext_missing.onnx", KILN_IO, "cannot open external data file");
	expect_error("ext_range.onnx", KILN_INVALID_MODEL, "bytes 64..80 lie outside");
	expect_error("ext_length.onnx", KILN_INVALID_MODEL, "length 4096 does not match");
}

static void copy_file(const char *from, const char *to)
{
	FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
	CHECK(in && out);
	if (in && out) {
		char buf[4096];
		size_t n;
		while ((n = fread(buf, 1, sizeof buf, in)) > 0)
			fwrite(buf, 1, n, out);
	}
	if (in)
		fclose(in);
	if (out)
		fclose(out);
}

static char *tmp(const char *rel)
{
	static char buf[4][1024];
	static int k;
	char *p = buf[k++ & 3];
	snprintf(p, 1024, "%s/%s", tmpdir, rel);
	return p;
}

/* A symlink inside the model's folder is fine; one leading out is refused. */
static void test_symlinks(void)
{
	mkdir(tmp("in"), 0755);
	mkdir(tmp("in/sub"), 0755);
	mkdir(tmp("out"), 0755);
	copy_file(fixture("external/model.onnx"), tmp("in/model.onnx"));
	copy_file(fixture("external/sub/more.bin"), tmp("in/sub/more.bin"));
	copy_file(fixture("external/weights.bin"), tmp("in/real.bin"));
	CHECK(symlink("real.bin", tmp("in/weights.bin")) == 0);
	Loaded l;
	load_into(&l, tmp("in/model.onnx"), (size_t)1 << 30);
	if (l.status != KILN_OK)
		fprintf(stderr, "symlink inside: %s\n", l.diag.msg);
	CHECK_EQ_INT(KILN_OK, l.status);
	unload(&l);

	copy_file(fixture("external/weights.bin"), tmp("out/weights.bin"));
	unlink(tmp("in/weights.bin"));
	char target[1100];
	snprintf(target, sizeof target, "%s", tmp("out/weights.bin"));
	CHECK(symlink(target, tmp("in/weights.bin")) == 0);
	expect_error_at(tmp("in/model.onnx"), KILN_INVALID_MODEL, "outside the model's folder");
	/* A symlinked sub-folder that leaves is caught the same way. */
	unlink(tmp("in/weights.bin"));
	copy_file(fixture("external/weights.bin"), tmp("in/weights.bin"));
	unlink(tmp("in/sub/more.bin"));
	rmdir(tmp("in/sub"));
	CHECK(symlink(tmp("out"), tmp("in/sub")) == 0);
	copy_file(fixture("external/sub/more.bin"), tmp("out/more.bin"));
	expect_error_at(tmp("in/model.onnx"), KILN_INVALID_MODEL, "outside the model's folder");
}

/* External data past 4 GiB, from a sparse file (no real disk used). */
static void test_big_offset(void)
{
	mkdir(tmp("big"), 0755);
	copy_file(fixture("ext_big_offset.onnx"), tmp("big/model.onnx"));
	int fd = open(tmp("big/big.bin"), O_CREAT | O_TRUNC | O_WRONLY, 0644);
	CHECK(fd >= 0);
	float v[4] = {1, 2, 3, 4};
	CHECK(pwrite(fd, v, sizeof v, 5000000000LL) == (ssize_t)sizeof v);
	close(fd);
	Loaded l;
	load_into(&l, tmp("big/model.onnx"), (size_t)1 << 30);
	if (l.status != KILN_OK)
		fprintf(stderr, "big offset: %s\n", l.diag.msg);
	CHECK_EQ_INT(KILN_OK, l.status);
	if (l.status == KILN_OK) {
		float got[4];
		memcpy(got, value(l.model->graph, "w")->weight->bytes, sizeof got);
		CHECK(got[0] == 1 && got[3] == 4);
	}
	unload(&l);
	unlink(tmp("big/big.bin"));
}

/* ---- hostile bytes ----------------------------------------------------- */

static size_t put_len_field(uint8_t *out, unsigned field, const uint8_t *payload, size_t n)
{
	size_t k = 0;
	out[k++] = (uint8_t)(field << 3 | 2);
	size_t v = n;
	do {
		out[k++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
	memmove(out + k, payload, n);
	return k + n;
}

static void write_file(const char *path, const void *data, size_t n)
{
	FILE *f = fopen(path, "wb");
	CHECK(f != NULL);
	if (f) {
		fwrite(data, 1, n, f);
		fclose(f);
	}
}

/* TypeProto.sequence_type.elem_type nested 10000 deep inside a graph input:
 * must stop at the depth limit, not overflow the stack. */
static void test_depth_bomb(void)
{
	enum { LEVELS = 10000 };
	size_t cap = (size_t)LEVELS * 16 + 64;
	uint8_t *a = calloc(1, cap), *b = calloc(1, cap);
	size_t n = 0;
	for (int i = 0; i < LEVELS; i++) {
		/* Sequence { elem_type: TypeProto } ; TypeProto { sequence_type: Sequence } */
		n = put_len_field(b, 1, a, n);
		n = put_len_field(a, 4, b, n);
	}
	n = put_len_field(b, 2, a, n);      /* ValueInfoProto.type */
	n = put_len_field(a, 11, b, n);     /* GraphProto.input */
	n = put_len_field(b, 7, a, n);      /* ModelProto.graph */
	write_file(tmp("deep.onnx"), b, n);
	expect_error_at(tmp("deep.onnx"), KILN_LIMIT, "nested deeper than");
	free(a);
	free(b);
}

static void test_memory_cap(void)
{
	Loaded l;
	load_into(&l, fixture("mlp.onnx"), 64 << 10);
	CHECK_EQ_INT(KILN_LIMIT, l.status);
	CHECK(strstr(l.diag.msg, "memory limit") != NULL);
	unload(&l);
}

/* Every prefix of a valid model, and every byte replaced by a few values:
 * each load either succeeds or fails cleanly with a user-error status. */
static void test_corruption_sweep(void)
{
	FILE *f = fopen(fixture("mlp.onnx"), "rb");
	CHECK(f != NULL);
	if (!f)
		return;
	uint8_t good[4096];
	size_t n = fread(good, 1, sizeof good, f);
	fclose(f);
	uint8_t bad[4096];
	int ok = 0, failed = 0;
	for (size_t cut = 0; cut < n; cut++) {
		write_file(tmp("cut.onnx"), good, cut);
		Loaded l;
		load_into(&l, tmp("cut.onnx"), (size_t)1 << 28);
		CHECK(l.status != KILN_OK && l.status != KILN_INTERNAL);
		unload(&l);
	}
	static const uint8_t repl[] = {0x00, 0x01, 0x7f, 0x80, 0xff};
	for (size_t i = 0; i < n; i++)
		for (size_t r = 0; r < sizeof repl; r++) {
			if (good[i] == repl[r])
				continue;
			memcpy(bad, good, n);
			bad[i] = repl[r];
			write_file(tmp("flip.onnx"), bad, n);
			Loaded l;
			load_into(&l, tmp("flip.onnx"), (size_t)1 << 28);
			CHECK(l.status != KILN_INTERNAL);
			if (l.status == KILN_OK) {
				ir_verify(l.model->graph);
				WeightStats ws;
				jmp_buf jb;
				l.diag.protect = &jb;
				if (setjmp(jb) == 0)
					weight_stats(l.model, &ws);
				ok++;
			} else {
				failed++;
				CHECK(l.diag.msg[0] != 0);
			}
			unload(&l);
		}
	printf("corruption sweep: %zu prefixes rejected; %d flips loaded, %d rejected\n", n, ok,
	       failed);
}

/* A program that links libkilnc keeps its own SIGBUS handler: kiln's (for
 * its mapped files that shrink, onnx_load.c) hands every other fault to it. */
static sigjmp_buf host_jb;
static volatile sig_atomic_t host_saw;

static void host_on_sigbus(int sig, siginfo_t *si, void *uc)
{
	(void)si;
	(void)uc;
	host_saw = sig;
	siglongjmp(host_jb, 1);
}

static void test_host_sigbus(void)
{
	struct sigaction sa, old;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = host_on_sigbus;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	CHECK(sigaction(SIGBUS, &sa, &old) == 0);
	Loaded l;
	load_into(&l, fixture("mlp.onnx"), 64u << 20);  /* maps the file: kiln's handler is in */
	CHECK(l.status == KILN_OK);
	struct sigaction now;
	CHECK(sigaction(SIGBUS, NULL, &now) == 0);
	CHECK(now.sa_sigaction != host_on_sigbus);  /* kiln's is in front */
	host_saw = 0;
	if (sigsetjmp(host_jb, 1) == 0)
		raise(SIGBUS);
	CHECK(host_saw == SIGBUS);
	unload(&l);
	CHECK(sigaction(SIGBUS, &old, NULL) == 0);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: test_loader FIXTURE_DIR\n");
		return 2;
	}
	fixdir = argv[1];
	snprintf(tmpdir, sizeof tmpdir, "%s/kiln-test-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 2;
	}
	test_host_sigbus();  /* first: before any load installs kiln's handler */
	test_mlp();
	test_all_dtypes();
	test_typed_large();
	test_constant_node();
	test_input_is_initializer();
	test_external();
	test_subgraphs();
	test_domains_and_check();
	test_dup_weights();
	test_registry();
	test_malformed();
	test_symlinks();
	test_big_offset();
	test_depth_bomb();
	test_memory_cap();
	test_corruption_sweep();
	char cmd[512];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", tmpdir);
	return check_report("test_loader");
}

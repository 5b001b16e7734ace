/*
 * onnx_load.c - read an .onnx file into the IR.
 *
 * The file is mapped read-only, wire.c cuts the weight payloads out into a
 * small skeleton, protobuf-c unpacks the skeleton into arena memory, and this
 * file turns the protobuf structures into Graph/Node/Value. No protobuf type
 * leaves this file. Weights point into the mapping (raw_data, packed
 * float/double), into external-data files mapped the same way, or, for the
 * typed fields that need decoding, into arena memory: one copy at most.
 *
 * Checked here, because every later stage relies on it: element types, tensor
 * sizes against their data, external-data paths (inside the model's folder,
 * in range), one producer per value, every input defined before use (after
 * sorting the nodes, as ONNX Runtime does), and outer-scope references from
 * subgraphs. Op semantics are not checked here.
 * Assumes a little-endian host, as ONNX raw_data is little-endian.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <protobuf-c/protobuf-c.h>

#include "load.h"
#include "schema.h"
#include "onnx.pb-c.h"

typedef struct Loader {
	Model *m;
	Arena *a;
	Diag *d;
	const uint8_t *file;   /* the model mapping */
	uint64_t file_bytes;
	bool alloc_failed;     /* protobuf-c hit the memory cap */
} Loader;

/* ---- files ------------------------------------------------------------ */

/* A mapped file that shrinks while kiln reads it (a checkout or a
 * regenerating step racing a parallel build) makes the next read of a page
 * past its new end raise SIGBUS. The handler turns that into the usual one
 * error line naming the file: it long-jumps through the Diag of the Model
 * whose mapping holds the address (model_close then removes the partial
 * outputs). Reads through system calls (pwrite of the weights) get EFAULT
 * instead, which compile.c reports the same way (model_changed_file). A
 * fault anywhere else goes to the handler the host process had installed
 * before kiln's (a program that links libkilnc keeps its own), or to the
 * default action. */
static Model *volatile bus_model;
static struct sigaction host_bus;   /* SIGBUS's action before kiln's */

static const Mapping *mapping_at(const Model *m, const void *addr)
{
	for (int i = 0; m && i < m->nmaps; i++) {
		const char *b = m->maps[i].base;
		if (b && (const char *)addr >= b && (const char *)addr < b + m->maps[i].bytes)
			return &m->maps[i];
	}
	return NULL;
}

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	Model *m = bus_model;
	const Mapping *mp = mapping_at(m, si->si_addr);
	if (mp && m->diag->protect)
		diag_fail(m->diag, KILN_IO,
		          "%s changed while kiln was reading it: it is now shorter than when it "
		          "was opened (was it rewritten during the build?)", mp->path);
	/* Not ours: the host's handler, else the default action (the fault repeats). */
	if ((host_bus.sa_flags & SA_SIGINFO) && host_bus.sa_sigaction) {
		host_bus.sa_sigaction(sig, si, uc);
		return;
	}
	if (!(host_bus.sa_flags & SA_SIGINFO) && host_bus.sa_handler != SIG_DFL &&
	    host_bus.sa_handler != SIG_IGN) {
		host_bus.sa_handler(sig);
		return;
	}
	signal(sig, SIG_DFL);
}

const char *model_changed_file(const Model *m)
{
	for (int i = 0; i < m->nmaps; i++) {
		struct stat st;
		if (stat(m->maps[i].path, &st) != 0 || (uint64_t)st.st_size < m->maps[i].bytes)
			return m->maps[i].path;
	}
	return NULL;
}

static const Mapping *map_file(Loader *L, const char *path, const char *label)
{
	Model *m = L->m;
	static bool installed;
	if (!installed) {
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_sigaction = on_sigbus;
		/* NODEFER: the handler long-jumps, so SIGBUS must not stay blocked. */
		sa.sa_flags = SA_SIGINFO | SA_NODEFER;
		sigemptyset(&sa.sa_mask);
		installed = sigaction(SIGBUS, &sa, &host_bus) == 0;
	}
	bus_model = m;
	for (int i = 0; i < m->nmaps; i++)
		if (strcmp(m->maps[i].path, path) == 0)
			return &m->maps[i];
	/* O_NONBLOCK: opening a FIFO must not wait for a writer (we refuse it below). */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		diag_fail(L->d, KILN_IO, "cannot open %s%s: %s", label, path, strerror(errno));
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		diag_fail(L->d, KILN_IO, "%s%s is not a regular file", label, path);
	}
	const void *base = NULL;
	if (st.st_size > 0) {
		base = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (base == MAP_FAILED) {
			int e = errno;
			close(fd);
			diag_fail(L->d, KILN_IO, "cannot map %s%s: %s", label, path, strerror(e));
		}
	}
	close(fd);
	m->maps = arena_grow(L->a, m->maps, m->nmaps, &m->capmaps, sizeof *m->maps);
	Mapping *mp = &m->maps[m->nmaps++];
	mp->path = arena_strdup(L->a, path);
	mp->base = base;
	mp->bytes = (uint64_t)st.st_size;
	return mp;
}

void model_warn(Model *m, const char *fmt, ...)
{
	if (m->nwarnings++ > 0)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(m->warning, sizeof m->warning, fmt, ap);
	va_end(ap);
	for (char *c = m->warning; *c; c++)  /* names are untrusted: one printable line */
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
}

void model_close(Model *m)
{
	if (!m)
		return;
	outputs_abort(m);
	if (bus_model == m)
		bus_model = NULL;
	for (int i = 0; i < 8; i++)
		if (m->files[i]) {
			fclose(m->files[i]);
			m->files[i] = NULL;
		}
	for (int i = 0; i < m->nmaps; i++)
		if (m->maps[i].base)
			munmap((void *)m->maps[i].base, (size_t)m->maps[i].bytes);
	m->nmaps = 0;
}

/* ---- protobuf-c allocator over the arena ------------------------------ */

static void *pb_alloc(void *user, size_t size)
{
	Loader *L = user;
	Arena *a = L->a;
	/* Refuse instead of long-jumping through protobuf-c. */
	if (size > a->cap_bytes || a->used_bytes + (1 << 20) > a->cap_bytes - size) {
		L->alloc_failed = true;
		return NULL;
	}
	return arena_alloc(a, size ? size : 1);
}

static void pb_free(void *user, void *p)
{
	(void)user;
	(void)p;  /* arena memory goes all at once */
}

/* ---- types and shapes ------------------------------------------------- */

static void shape_from_proto(Loader *L, const Onnx__TensorShapeProto *sp, Shape *s,
                             const char *what)
{
	s->rank = -1;
	if (!sp)
		return;
	if (sp->n_dim > KILN_MAX_RANK)
		diag_fail(L->d, KILN_LIMIT, "%s has rank %zu; kiln supports rank up to %d", what,
		          sp->n_dim, KILN_MAX_RANK);
	s->rank = (int)sp->n_dim;
	for (size_t i = 0; i < sp->n_dim; i++) {
		const Onnx__TensorShapeProto__Dimension *dp = sp->dim[i];
		Dim *dim = &s->dims[i];
		dim->size = -1;
		dim->param = NULL;
		if (dp->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
		    dp->dim_value >= 0)
			dim->size = dp->dim_value;
		else if (dp->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
		         dp->dim_param && dp->dim_param[0])
			dim->param = arena_strdup(L->a, dp->dim_param);
	}
}

static void check_elem_type(Loader *L, int32_t t, const char *what)
{
	if (t != DT_UNDEFINED && !dtype_valid(t))
		diag_fail(L->d, KILN_INVALID_MODEL, "%s has unknown element type %d", what, (int)t);
}

/* Fill v's type from a TypeProto; nested sequences/optionals keep the
 * innermost tensor element type. */
static void type_from_proto(Loader *L, const Onnx__TypeProto *tp, Value *v, int depth)
{
	if (!tp)
		return;
	char what[300];
	snprintf(what, sizeof what, "value \"%.256s\"", v->name);
	switch (tp->value_case) {
	case ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE:
		if (depth == 0)
			v->type = TK_TENSOR;
		if (tp->tensor_type->has_elem_type) {
			check_elem_type(L, tp->tensor_type->elem_type, what);
			v->dtype = tp->tensor_type->elem_type;
		}
		if (depth == 0)
			shape_from_proto(L, tp->tensor_type->shape, &v->shape, what);
		break;
	case ONNX__TYPE_PROTO__VALUE_SPARSE_TENSOR_TYPE:
		if (depth == 0)
			v->type = TK_SPARSE;
		if (tp->sparse_tensor_type->has_elem_type) {
			check_elem_type(L, tp->sparse_tensor_type->elem_type, what);
			v->dtype = tp->sparse_tensor_type->elem_type;
		}
		if (depth == 0)
			shape_from_proto(L, tp->sparse_tensor_type->shape, &v->shape, what);
		break;
	case ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE:
		if (depth == 0)
			v->type = TK_SEQUENCE;
		type_from_proto(L, tp->sequence_type->elem_type, v, depth + 1);
		break;
	case ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE:
		if (depth == 0)
			v->type = TK_OPTIONAL;
		type_from_proto(L, tp->optional_type->elem_type, v, depth + 1);
		break;
	case ONNX__TYPE_PROTO__VALUE_MAP_TYPE:
		if (depth == 0)
			v->type = TK_MAP;
		type_from_proto(L, tp->map_type->value_type, v, depth + 1);
		break;
	default:
		break;
	}
}

/* ---- tensors ---------------------------------------------------------- */

static bool parse_u64(const char *s, uint64_t *out)
{
	if (!s || !*s)
		return false;
	uint64_t v = 0;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || v > (UINT64_MAX - 9) / 10)
			return false;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = v;
	return true;
}

/* Resolve an external-data location against the model's folder. Refuses
 * absolute paths, ".." components, and anything (a symlink) whose real path
 * leaves the folder. */
static const Mapping *open_external(Loader *L, const char *loc, const char *what)
{
	if (!loc || !*loc)
		diag_fail(L->d, KILN_INVALID_MODEL, "%s has external data without a location", what);
	if (loc[0] == '/' || loc[0] == '\\')
		diag_fail(L->d, KILN_INVALID_MODEL,
		          "%s: external data location \"%s\" is an absolute path; it must be "
		          "relative to the model's folder",
		          what, loc);
	for (const char *p = loc; *p;) {
		const char *q = p;
		while (*q && *q != '/' && *q != '\\')
			q++;
		if (q - p == 2 && p[0] == '.' && p[1] == '.')
			diag_fail(L->d, KILN_INVALID_MODEL,
			          "%s: external data location \"%s\" contains \"..\"; it must stay "
			          "inside the model's folder",
			          what, loc);
		p = *q ? q + 1 : q;
	}
	char *path = arena_printf(L->a, "%s/%s", L->m->dir, loc);
	char *real_dir = realpath(L->m->dir, NULL);
	char *real = realpath(path, NULL);
	if (!real) {
		int e = errno;
		free(real_dir);
		diag_fail(L->d, KILN_IO, "%s: cannot open external data file \"%s\": %s", what, path,
		          strerror(e));
	}
	size_t n = real_dir ? strlen(real_dir) : 0;
	bool inside = real_dir && strncmp(real, real_dir, n) == 0 &&
	              (real[n] == '/' || (n == 1 && real_dir[0] == '/'));
	char *real_copy = arena_strdup(L->a, real);
	free(real);
	free(real_dir);
	if (!inside)
		diag_fail(L->d, KILN_INVALID_MODEL,
		          "%s: external data location \"%s\" resolves to %s, outside the model's "
		          "folder (symbolic link?)",
		          what, loc, real_copy);
	return map_file(L, real_copy, "external data file ");
}

/* Narrow int32_data/uint64_data elements into an arena buffer of esize bytes each. */
static const void *narrow(Loader *L, const void *src, size_t src_esize, int64_t n, size_t esize)
{
	uint8_t *dst = arena_array(L->a, (size_t)n, esize);
	for (int64_t i = 0; i < n; i++) {
		uint64_t v = src_esize == 4 ? (uint64_t)(uint32_t)((const int32_t *)src)[i]
		                            : ((const uint64_t *)src)[i];
		memcpy(dst + (size_t)i * esize, &v, esize); /* little-endian: low bytes first */
	}
	return dst;
}

/* A tensor's dims into s, checked (rank, negatives, a product past 2^62);
 * returns the element count. */
static int64_t dims_from_proto(Loader *L, const int64_t *dims, size_t n, Shape *s,
                               const char *what)
{
	if (n > KILN_MAX_RANK)
		diag_fail(L->d, KILN_LIMIT, "%s has rank %zu; kiln supports rank up to %d", what, n,
		          KILN_MAX_RANK);
	s->rank = (int)n;
	int64_t nelem = 1;
	for (size_t i = 0; i < n; i++) {
		int64_t dim = dims[i];
		if (dim < 0)
			diag_fail(L->d, KILN_INVALID_MODEL, "%s has negative dimension %lld at axis %zu",
			          what, (long long)dim, i);
		if (dim && nelem > ((int64_t)1 << 62) / dim)
			diag_fail(L->d, KILN_LIMIT, "%s has too many elements", what);
		nelem *= dim;
		s->dims[i].size = dim;
	}
	return nelem;
}

/* Decode a TensorProto into t. `what` names it in errors. */
static void tensor_from_proto(Loader *L, const Onnx__TensorProto *tp, Tensor *t, const char *what)
{
	memset(t, 0, sizeof *t);
	if (!tp->has_data_type || tp->data_type == DT_UNDEFINED)
		diag_fail(L->d, KILN_INVALID_MODEL, "%s has no element type", what);
	if (!dtype_valid(tp->data_type))
		diag_fail(L->d, KILN_INVALID_MODEL, "%s has unknown element type %d", what,
		          (int)tp->data_type);
	t->dtype = tp->data_type;
	int64_t nelem = dims_from_proto(L, tp->dims, tp->n_dims, &t->shape, what);
	if (tp->segment)
		diag_fail(L->d, KILN_UNSUPPORTED, "%s is a segmented tensor", what);
	Weight *w = &t->w;
	w->nelem = nelem;
	size_t esize = dtype_size(t->dtype);
	uint64_t want = dtype_bytes(t->dtype, nelem); /* esize <= 16, nelem < 2^62/16 checked below */
	if (esize && (uint64_t)nelem > UINT64_MAX / 16)
		diag_fail(L->d, KILN_LIMIT, "%s has too many elements", what);

	if (tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
		if (t->dtype == DT_STRING)
			diag_fail(L->d, KILN_INVALID_MODEL, "%s: string tensors cannot use external data",
			          what);
		const char *loc = NULL;
		uint64_t off = 0, len = 0;
		bool has_len = false;
		for (size_t i = 0; i < tp->n_external_data; i++) {
			const char *k = tp->external_data[i]->key, *v = tp->external_data[i]->value;
			if (!k)
				continue;
			if (strcmp(k, "location") == 0)
				loc = v;
			else if (strcmp(k, "offset") == 0 && !parse_u64(v, &off))
				diag_fail(L->d, KILN_INVALID_MODEL, "%s: bad external data offset \"%s\"",
				          what, v ? v : "");
			else if (strcmp(k, "length") == 0) {
				if (!parse_u64(v, &len))
					diag_fail(L->d, KILN_INVALID_MODEL,
					          "%s: bad external data length \"%s\"", what, v ? v : "");
				has_len = true;
			}
		}
		const Mapping *mp = open_external(L, loc, what);
		if (has_len && len != want)
			diag_fail(L->d, KILN_INVALID_MODEL,
			          "%s: external data length %llu does not match its shape (%llu bytes)",
			          what, (unsigned long long)len, (unsigned long long)want);
		if (off > mp->bytes || want > mp->bytes - off)
			diag_fail(L->d, KILN_INVALID_MODEL,
			          "%s: external data bytes %llu..%llu lie outside \"%s\" (%llu bytes)",
			          what, (unsigned long long)off, (unsigned long long)(off + want), loc,
			          (unsigned long long)mp->bytes);
		w->bytes = want ? (const uint8_t *)mp->base + off : NULL;
		w->nbytes = want;
		w->location = arena_strdup(L->a, loc);
		w->is_mapped = true;
		return;
	}

	/* Stubbed payloads (wire.c): the last record of a field wins, as in protobuf. */
	const void *raw = NULL, *fdata = NULL, *ddata = NULL;
	uint64_t raw_n = 0, fdata_n = 0, ddata_n = 0;
	bool has_raw = false;
	for (size_t i = 0; i < tp->base.n_unknown_fields; i++) {
		const ProtobufCMessageUnknownField *u = &tp->base.unknown_fields[i];
		Stub s;
		if (u->tag != WIRE_STUB_FIELD || !wire_stub_decode(u->data, u->len, &s))
			continue;
		KILN_ASSERT(s.off <= L->file_bytes && s.bytes <= L->file_bytes - s.off);
		const void *p = L->file + s.off;
		if (s.field == 9) {
			raw = p;
			raw_n = s.bytes;
			has_raw = true;
		} else if (s.field == 4) {
			fdata = p;
			fdata_n = s.bytes / 4;
		} else if (s.field == 10) {
			ddata = p;
			ddata_n = s.bytes / 8;
		}
	}
	if (tp->has_raw_data) {
		raw = tp->raw_data.data;
		raw_n = tp->raw_data.len;
		has_raw = true;
	}
	if (!fdata && tp->n_float_data) {
		fdata = tp->float_data;
		fdata_n = tp->n_float_data;
	}
	if (!ddata && tp->n_double_data) {
		ddata = tp->double_data;
		ddata_n = tp->n_double_data;
	}

	if (t->dtype == DT_STRING) {
		if (has_raw)
			diag_fail(L->d, KILN_INVALID_MODEL, "%s: string tensors cannot use raw_data", what);
		if ((int64_t)tp->n_string_data != nelem)
			diag_fail(L->d, KILN_INVALID_MODEL,
			          "%s has %zu strings but its shape holds %lld elements", what,
			          tp->n_string_data, (long long)nelem);
		WeightString *ws = arena_array(L->a, tp->n_string_data, sizeof *ws);
		for (size_t i = 0; i < tp->n_string_data; i++) {
			ws[i].data = tp->string_data[i].data ? (const char *)tp->string_data[i].data : "";
			ws[i].len = tp->string_data[i].data ? tp->string_data[i].len : 0;
			w->nbytes += ws[i].len;
		}
		w->bytes = ws;
		return;
	}
	w->nbytes = want;
	if (has_raw) {
		if (raw_n != want)
			diag_fail(L->d, KILN_INVALID_MODEL,
			          "%s has %llu bytes of raw_data but its shape and type need %llu", what,
			          (unsigned long long)raw_n, (unsigned long long)want);
		w->bytes = raw;
		w->is_mapped = raw && (const uint8_t *)raw >= L->file &&
		               (const uint8_t *)raw < L->file + L->file_bytes;
		return;
	}
	/* Typed fields: which one the spec assigns, and how many numbers per element. */
	const void *src = NULL;
	uint64_t have = 0;
	size_t src_esize = 0;
	int per = (t->dtype == DT_COMPLEX64 || t->dtype == DT_COMPLEX128) ? 2 : 1;
	const char *field = "";
	switch (t->dtype) {
	case DT_FLOAT: case DT_COMPLEX64:
		src = fdata, have = fdata_n, src_esize = 4, field = "float_data";
		w->is_mapped = fdata && fdata != tp->float_data;
		break;
	case DT_DOUBLE: case DT_COMPLEX128:
		src = ddata, have = ddata_n, src_esize = 8, field = "double_data";
		w->is_mapped = ddata && ddata != tp->double_data;
		break;
	case DT_INT64:
		src = tp->int64_data, have = tp->n_int64_data, src_esize = 8, field = "int64_data";
		break;
	case DT_UINT32: case DT_UINT64:
		src = tp->uint64_data, have = tp->n_uint64_data, src_esize = 8, field = "uint64_data";
		break;
	default: /* INT32 and the narrower integer, bool and 16-bit float types */
		src = tp->int32_data, have = tp->n_int32_data, src_esize = 4, field = "int32_data";
		break;
	}
	if (nelem == 0 && have == 0)
		return;
	if (have == 0)
		diag_fail(L->d, KILN_INVALID_MODEL, "%s has no data (neither raw_data nor %s)", what,
		          field);
	if (DT_IS_4BIT(t->dtype)) {
		/* int32_data holds the packed bytes, one per number. */
		if (have != want)
			diag_fail(L->d, KILN_INVALID_MODEL,
			          "%s has %llu values in int32_data but its %lld %s elements pack into %llu "
			          "bytes", what, (unsigned long long)have, (long long)nelem,
			          dtype_name(t->dtype), (unsigned long long)want);
		w->bytes = narrow(L, src, src_esize, (int64_t)want, 1);
		return;
	}
	if (have != (uint64_t)nelem * (uint64_t)per)
		diag_fail(L->d, KILN_INVALID_MODEL,
		          "%s has %llu values in %s but its shape holds %lld elements", what,
		          (unsigned long long)have, field, (long long)nelem);
	w->bytes = src_esize == esize / (size_t)per ? src : narrow(L, src, src_esize, nelem, esize);
}

/* ---- sparse tensors --------------------------------------------------- */

/* Largest dense tensor a sparse one is expanded into (docs/limits.md): a few
 * indices must not silently become a weight of gigabytes in the program. */
enum { SPARSE_MAX_DENSE_BYTES = 16 << 20 };

/* Index k of an integer tensor (any signed width; bytes may be unaligned). */
static int64_t index_at(const Tensor *t, int64_t k)
{
	const uint8_t *p = (const uint8_t *)t->w.bytes + (size_t)k * dtype_size(t->dtype);
	switch (t->dtype) {
	case DT_INT8: return (int8_t)p[0];
	case DT_INT16: { int16_t v; memcpy(&v, p, sizeof v); return v; }
	case DT_INT32: { int32_t v; memcpy(&v, p, sizeof v); return v; }
	default: { int64_t v; memcpy(&v, p, sizeof v); return v; }
	}
}

/* Decode a SparseTensorProto into t as the dense tensor it stands for:
 * values [NNZ] placed at indices [NNZ] (linearized) or [NNZ, rank], zero (or
 * "") elsewhere. Every index is checked: in range, and in strictly
 * ascending order as onnx.proto requires (so no duplicates). */
static void sparse_from_proto(Loader *L, const Onnx__SparseTensorProto *sp, Tensor *t,
                              const char *what)
{
	memset(t, 0, sizeof *t);
	if (!sp->values)
		diag_fail(L->d, KILN_INVALID_MODEL, "%s has no values", what);
	Tensor vals, idx = {0};
	tensor_from_proto(L, sp->values, &vals, arena_printf(L->a, "%s values", what));
	if (vals.shape.rank != 1)
		diag_fail(L->d, KILN_INVALID_MODEL, "%s: values have rank %d; they must be a list [NNZ]",
		          what, vals.shape.rank);
	int64_t nnz = vals.shape.dims[0].size;
	t->dtype = vals.dtype;
	int64_t nelem = dims_from_proto(L, sp->dims, sp->n_dims, &t->shape, what);
	int rank = t->shape.rank;
	uint64_t dense = t->dtype == DT_STRING ? (uint64_t)nelem * sizeof(WeightString)
	                                       : dtype_bytes(t->dtype, nelem);
	if (dense > SPARSE_MAX_DENSE_BYTES)
		diag_fail(L->d, KILN_LIMIT, "%s holds %lld values in %lld elements: %.1f MiB dense, more "
		          "than the %d MiB kiln expands a sparse tensor into; store it dense", what,
		          (long long)nnz, (long long)nelem, (double)dense / (1 << 20),
		          SPARSE_MAX_DENSE_BYTES >> 20);
	if (nnz > nelem)
		diag_fail(L->d, KILN_INVALID_MODEL, "%s has %lld values for %lld elements", what,
		          (long long)nnz, (long long)nelem);
	bool coords = false;
	if (sp->indices) {
		tensor_from_proto(L, sp->indices, &idx, arena_printf(L->a, "%s indices", what));
		if (idx.dtype != DT_INT64 && idx.dtype != DT_INT32 && idx.dtype != DT_INT16 &&
		    idx.dtype != DT_INT8)
			diag_fail(L->d, KILN_INVALID_MODEL, "%s: indices are %s; they must be a signed "
			          "integer type", what, dtype_name(idx.dtype));
		coords = idx.shape.rank == 2;
		if (!(idx.shape.rank == 1 || coords) || idx.shape.dims[0].size != nnz ||
		    (coords && idx.shape.dims[1].size != rank))
			diag_fail(L->d, KILN_INVALID_MODEL, "%s: indices of rank %d and %lld rows do not fit "
			          "%lld values of a rank-%d tensor (need [%lld] or [%lld, %d])", what,
			          idx.shape.rank, (long long)(idx.shape.rank ? idx.shape.dims[0].size : 1),
			          (long long)nnz, rank, (long long)nnz, (long long)nnz, rank);
	} else if (nnz > 0) {
		diag_fail(L->d, KILN_INVALID_MODEL, "%s has %lld values but no indices", what,
		          (long long)nnz);
	}
	size_t esize = t->dtype == DT_STRING ? sizeof(WeightString) : dtype_size(t->dtype);
	uint8_t *out = arena_array(L->a, (size_t)dense, 1);
	if (t->dtype == DT_STRING)
		for (int64_t e = 0; e < nelem; e++)
			((WeightString *)out)[e].data = "";
	int64_t prev = -1;
	for (int64_t i = 0; i < nnz; i++) {
		int64_t at = 0;
		if (coords) {
			for (int k = 0; k < rank; k++) {
				int64_t c = index_at(&idx, i * rank + k);
				if (c < 0 || c >= t->shape.dims[k].size)
					diag_fail(L->d, KILN_INVALID_MODEL, "%s: index %lld of value %lld lies "
					          "outside dimension %d (size %lld)", what, (long long)c,
					          (long long)i, k, (long long)t->shape.dims[k].size);
				at = at * t->shape.dims[k].size + c;
			}
		} else {
			at = index_at(&idx, i);
			if (at < 0 || at >= nelem)
				diag_fail(L->d, KILN_INVALID_MODEL, "%s: index %lld of value %lld lies outside "
				          "its %lld elements", what, (long long)at, (long long)i,
				          (long long)nelem);
		}
		if (at <= prev)
			diag_fail(L->d, KILN_INVALID_MODEL, "%s: value %lld %s (element %lld); indices "
			          "must ascend without repeats", what, (long long)i,
			          at == prev ? "repeats the previous index" : "comes after a larger index",
			          (long long)at);
		prev = at;
		if (DT_IS_4BIT(t->dtype)) {
			const uint8_t *v = vals.w.bytes;
			int nib = (v[i / 2] >> (4 * (i % 2))) & 15;
			out[at / 2] |= (uint8_t)(nib << (4 * (at % 2)));
		} else if (t->dtype == DT_STRING) {
			((WeightString *)out)[at] = ((const WeightString *)vals.w.bytes)[i];
		} else {
			memcpy(out + (size_t)at * esize, (const uint8_t *)vals.w.bytes + (size_t)i * esize,
			       esize);
		}
	}
	t->w.nelem = nelem;
	t->w.bytes = out;
	t->w.nbytes = t->dtype == DT_STRING ? vals.w.nbytes : dense;
}

/* ---- graphs ----------------------------------------------------------- */

static Graph *load_graph(Loader *L, const Onnx__GraphProto *gp, Graph *parent, int parent_node,
                         const char *parent_attr);

/* How many graphs enclose g (0 for the main graph). */
static int graph_depth(const Graph *g)
{
	int depth = 0;
	for (; g->parent; g = g->parent)
		depth++;
	return depth;
}

static const char *str_or_empty(const char *s)
{
	return s ? s : "";
}

static void load_attr(Loader *L, Graph *g, Node *n, const Onnx__AttributeProto *ap, Attr *at)
{
	at->name = arena_strdup(L->a, str_or_empty(ap->name));
	/* ref_attr_name binds a function body's attribute to the caller's; kiln
	 * loads no function bodies (a call is refused by name, ops.c), so every
	 * node here is outside one, where the reference has no value (ONNX
	 * Runtime 1.x reads it as 0: a LeakyRelu with alpha 0, not even the
	 * default). The model is invalid; refused rather than guessed. */
	if (ap->ref_attr_name)
		diag_fail_node(L->d, g, n, KILN_INVALID_MODEL, "attribute \"%.100s\" refers to a "
		               "function attribute (ref_attr_name \"%.100s\") outside a function body",
		               at->name, ap->ref_attr_name);
	AttrType type = ap->has_type ? (AttrType)ap->type : AT_UNDEFINED;
	if (type == AT_UNDEFINED) {
		/* Old models leave the type out; take it from the field that is set. */
		if (ap->has_f) type = AT_FLOAT;
		else if (ap->has_i) type = AT_INT;
		else if (ap->has_s) type = AT_STRING;
		else if (ap->t) type = AT_TENSOR;
		else if (ap->g) type = AT_GRAPH;
		else if (ap->n_floats) type = AT_FLOATS;
		else if (ap->n_ints) type = AT_INTS;
		else if (ap->n_strings) type = AT_STRINGS;
		else if (ap->n_tensors) type = AT_TENSORS;
		else if (ap->n_graphs) type = AT_GRAPHS;
		else if (ap->sparse_tensor) type = AT_SPARSE_TENSOR;
		else if (ap->tp) type = AT_TYPE_PROTO;
		else
			diag_fail_node(L->d, g, n, KILN_INVALID_MODEL, "attribute \"%s\" has no type and no value",
			               at->name);
	}
	at->type = type;
	char what[400];
	snprintf(what, sizeof what, "attribute \"%.160s\" of node \"%.150s\" (%.60s)", at->name,
	         n->name, n->op_type ? n->op_type : "?");
	switch (type) {
	case AT_UNDEFINED: break;
	case AT_FLOAT: at->f = ap->f; break;
	case AT_INT: at->i = ap->i; break;
	case AT_STRING:
		/* an absent or empty string may come with no data: never NULL here
		 * (memcpy and "%.*s" of NULL are undefined even for length 0) */
		at->s.data = ap->s.data ? (const char *)ap->s.data : "";
		at->s.len = ap->s.data ? ap->s.len : 0;
		break;
	case AT_FLOATS:
		at->n = (int)ap->n_floats;
		at->floats = ap->floats;
		break;
	case AT_INTS:
		at->n = (int)ap->n_ints;
		at->ints = ap->ints;
		break;
	case AT_STRINGS:
		at->n = (int)ap->n_strings;
		at->strings = arena_array(L->a, ap->n_strings, sizeof *at->strings);
		for (size_t i = 0; i < ap->n_strings; i++) {
			at->strings[i].data = ap->strings[i].data ? (const char *)ap->strings[i].data : "";
			at->strings[i].len = ap->strings[i].data ? ap->strings[i].len : 0;
		}
		break;
	case AT_TENSOR:
	case AT_TENSORS: {
		size_t count = type == AT_TENSOR ? (ap->t ? 1 : 0) : ap->n_tensors;
		if (type == AT_TENSOR && !ap->t)
			diag_fail_node(L->d, g, n, KILN_INVALID_MODEL, "attribute \"%s\" has no tensor",
			               at->name);
		at->n = (int)count;
		at->tensors = arena_array(L->a, count, sizeof *at->tensors);
		for (size_t i = 0; i < count; i++)
			tensor_from_proto(L, type == AT_TENSOR ? ap->t : ap->tensors[i], &at->tensors[i],
			                  what);
		break;
	}
	case AT_GRAPH:
	case AT_GRAPHS: {
		size_t count = type == AT_GRAPH ? (ap->g ? 1 : 0) : ap->n_graphs;
		if (type == AT_GRAPH && !ap->g)
			diag_fail_node(L->d, g, n, KILN_INVALID_MODEL, "attribute \"%s\" has no graph",
			               at->name);
		/* Named without the path of enclosing nodes, which would be as long. */
		if (count && graph_depth(g) + 1 > L->m->limits.max_depth)
			diag_fail(L->d, KILN_LIMIT, "graph \"%s\", node %d \"%s\" (%s): attribute \"%s\" "
			          "holds a subgraph nested %d deep, more than the limit of %lld (raise it "
			          "with --max-depth)", g->name, n->id, n->name ? n->name : "",
			          n->op_type ? n->op_type : "?", at->name, graph_depth(g) + 1,
			          (long long)L->m->limits.max_depth);
		at->n = (int)count;
		at->graphs = arena_array(L->a, count, sizeof *at->graphs);
		for (size_t i = 0; i < count; i++)
			at->graphs[i] = load_graph(L, type == AT_GRAPH ? ap->g : ap->graphs[i], g, n->id,
			                           at->name);
		break;
	}
	case AT_SPARSE_TENSOR:
	case AT_SPARSE_TENSORS: {
		/* Densified and checked as sparse initializers are; a Constant's
		 * sparse_value then reads as its dense value. */
		size_t count = type == AT_SPARSE_TENSOR ? (ap->sparse_tensor ? 1 : 0)
		                                        : ap->n_sparse_tensors;
		if (type == AT_SPARSE_TENSOR && !ap->sparse_tensor)
			diag_fail_node(L->d, g, n, KILN_INVALID_MODEL, "attribute \"%s\" has no sparse tensor",
			               at->name);
		at->n = (int)count;
		at->tensors = arena_array(L->a, count, sizeof *at->tensors);
		for (size_t i = 0; i < count; i++)
			sparse_from_proto(L, type == AT_SPARSE_TENSOR ? ap->sparse_tensor
			                                              : ap->sparse_tensors[i],
			                  &at->tensors[i], what);
		if (type == AT_SPARSE_TENSOR && n->domain_id == DOMAIN_ONNX &&
		    strcmp(n->op_type, "Constant") == 0 && strcmp(at->name, "sparse_value") == 0) {
			at->name = "value";
			at->type = AT_TENSOR;
		}
		break;
	}
	case AT_TYPE_PROTO:
	case AT_TYPE_PROTOS:
		/* Kept by type only: no op kiln compiles reads them. */
		break;
	default:
		diag_fail_node(L->d, g, n, KILN_INVALID_MODEL, "attribute \"%s\" has unknown type %d",
		               at->name, (int)type);
	}
}

/* ---- node order ------------------------------------------------------- */

/* ONNX requires nodes in topological order, but some exporters (and ONNX
 * Runtime's own test files) do not keep it, and ONNX Runtime sorts them. So
 * the loader sorts too: a stable topological order (Kahn's algorithm taking
 * the lowest original position first), so a sorted graph keeps its order and
 * node ids. A node with subgraphs depends on every name its subgraphs read.
 * A name produced by two Constant nodes keeps the last, as ONNX Runtime does
 * (it takes them as initializers), with a warning on the model. */

typedef struct NameTab {
	const char **keys;
	int *vals;
	size_t cap;
} NameTab;

static int *name_slot(NameTab *t, const char *name)
{
	size_t i = (size_t)name_hash(name) & (t->cap - 1);
	while (t->keys[i] && strcmp(t->keys[i], name) != 0)
		i = (i + 1) & (t->cap - 1);
	if (!t->keys[i]) {
		t->keys[i] = name;
		t->vals[i] = NONE;
	}
	return &t->vals[i];
}

static int name_find(const NameTab *t, const char *name)
{
	size_t i = (size_t)name_hash(name) & (t->cap - 1);
	while (t->keys[i]) {
		if (strcmp(t->keys[i], name) == 0)
			return t->vals[i];
		i = (i + 1) & (t->cap - 1);
	}
	return NONE;
}

typedef struct Edges {
	int *from, *to;
	size_t n, cap;
} Edges;

static void add_edge(Loader *L, Edges *e, int from, int to)
{
	if (e->n == e->cap) {
		size_t cap = e->cap ? 2 * e->cap : 64;
		int *f = arena_array(L->a, cap, sizeof *f), *t = arena_array(L->a, cap, sizeof *t);
		if (e->n) {
			memcpy(f, e->from, e->n * sizeof *f);
			memcpy(t, e->to, e->n * sizeof *t);
		}
		e->from = f;
		e->to = t;
		e->cap = cap;
	}
	e->from[e->n] = from;
	e->to[e->n++] = to;
}

static void depend_on(Loader *L, const NameTab *prod, Edges *e, const char *name, int node)
{
	int p = name && name[0] ? name_find(prod, name) : NONE;
	if (p != NONE)
		add_edge(L, e, p, node);
}

/* The names a subgraph defines itself, and those of the subgraphs around
 * it (up to the graph being sorted): what its nodes read from these is not
 * the enclosing graph's. */
typedef struct Scope {
	NameTab names;
	const struct Scope *up;
} Scope;

static void scope_add(NameTab *t, const char *name)
{
	if (name && name[0])
		*name_slot(t, name) = 0;
}

static bool in_scope(const Scope *s, const char *name)
{
	for (; s; s = s->up)
		if (name_find(&s->names, name) != NONE)
			return true;
	return false;
}

/* Every outer name a subgraph (and its own subgraphs) reads or returns.
 * Names the subgraph defines (its inputs, initializers and node outputs)
 * are its own even where the enclosing graph defines them too: ONNX forbids
 * such shadowing, but CNTK's Scan bodies reuse outer names, ONNX Runtime
 * runs them, and counting them as outer made a node after the Scan that
 * produces one look like the Scan's input, a cycle. depth is sg's nesting
 * in the model; past --max-depth the walk stops (load_attr then refuses the
 * node holding the subgraph, by name). */
static void depend_on_subgraph(Loader *L, const NameTab *prod, Edges *e,
                               const Onnx__GraphProto *sg, int node, int depth, const Scope *up)
{
	if (depth > L->m->limits.max_depth)
		return;
	size_t count = sg->n_input + sg->n_initializer + sg->n_sparse_initializer;
	for (size_t i = 0; i < sg->n_node; i++)
		count += sg->node[i]->n_output;
	Scope here = {.names = {.cap = 16}, .up = up};
	while (here.names.cap < 2 * count + 2)
		here.names.cap *= 2;
	here.names.keys = arena_array(L->a, here.names.cap, sizeof *here.names.keys);
	here.names.vals = arena_array(L->a, here.names.cap, sizeof *here.names.vals);
	for (size_t i = 0; i < sg->n_input; i++)
		scope_add(&here.names, sg->input[i]->name);
	for (size_t i = 0; i < sg->n_initializer; i++)
		scope_add(&here.names, sg->initializer[i]->name);
	for (size_t i = 0; i < sg->n_sparse_initializer; i++)
		if (sg->sparse_initializer[i]->values)
			scope_add(&here.names, sg->sparse_initializer[i]->values->name);
	for (size_t i = 0; i < sg->n_node; i++)
		for (size_t k = 0; k < sg->node[i]->n_output; k++)
			scope_add(&here.names, sg->node[i]->output[k]);
	for (size_t i = 0; i < sg->n_node; i++) {
		const Onnx__NodeProto *np = sg->node[i];
		for (size_t k = 0; k < np->n_input; k++)
			if (np->input[k] && !in_scope(&here, np->input[k]))
				depend_on(L, prod, e, np->input[k], node);
		for (size_t k = 0; k < np->n_attribute; k++) {
			const Onnx__AttributeProto *ap = np->attribute[k];
			if (ap->g)
				depend_on_subgraph(L, prod, e, ap->g, node, depth + 1, &here);
			for (size_t j = 0; j < ap->n_graphs; j++)
				depend_on_subgraph(L, prod, e, ap->graphs[j], node, depth + 1, &here);
		}
	}
	for (size_t i = 0; i < sg->n_output; i++)
		if (sg->output[i]->name && !in_scope(&here, sg->output[i]->name))
			depend_on(L, prod, e, sg->output[i]->name, node);
}

static const char *node_label(const Onnx__NodeProto *np)
{
	return np->name && np->name[0] ? np->name : np->op_type ? np->op_type : "?";
}

static bool is_constant_node(const Onnx__NodeProto *np)
{
	return np->n_output == 1 && np->op_type && strcmp(np->op_type, "Constant") == 0 &&
	       (!np->domain || !np->domain[0] || strcmp(np->domain, "ai.onnx") == 0);
}

/* The order to load gp's nodes in (indices into gp->node); *count drops the
 * earlier producers of duplicated names. */
static int *node_order(Loader *L, const Onnx__GraphProto *gp, const char *gname, int depth,
                       int *count)
{
	size_t nn = gp->n_node, nouts = 0;
	for (size_t i = 0; i < nn; i++)
		nouts += gp->node[i]->n_output;
	NameTab prod = {.cap = 16};
	while (prod.cap < 2 * nouts + 2)
		prod.cap *= 2;
	prod.keys = arena_array(L->a, prod.cap, sizeof *prod.keys);
	prod.vals = arena_array(L->a, prod.cap, sizeof *prod.vals);
	bool *dropped = arena_array(L->a, nn ? nn : 1, sizeof *dropped);
	for (size_t i = 0; i < nn; i++) {
		const Onnx__NodeProto *np = gp->node[i];
		for (size_t k = 0; k < np->n_output; k++) {
			const char *name = np->output[k];
			if (!name || !name[0])
				continue;
			int *slot = name_slot(&prod, name);
			if (*slot != NONE && *slot != (int)i) {
				/* Two Constant nodes: ONNX Runtime takes them as initializers
				 * and keeps the last. Anything else is refused by load_node. */
				const Onnx__NodeProto *ep = gp->node[*slot];
				if (!is_constant_node(ep) || !is_constant_node(np))
					continue;
				if (!dropped[*slot])
					model_warn(L->m, "graph \"%s\": \"%s\" is produced by Constant nodes %d "
					           "\"%s\" and %zu \"%s\"; the last one is kept, as ONNX Runtime "
					           "does", gname, name, *slot, node_label(ep), i, node_label(np));
				dropped[*slot] = true;
			}
			*slot = (int)i;
		}
	}
	Edges e = {0};
	for (size_t i = 0; i < nn; i++) {
		const Onnx__NodeProto *np = gp->node[i];
		if (dropped[i])
			continue;
		for (size_t k = 0; k < np->n_input; k++)
			depend_on(L, &prod, &e, np->input[k], (int)i);
		for (size_t k = 0; k < np->n_attribute; k++) {
			const Onnx__AttributeProto *ap = np->attribute[k];
			if (ap->g)
				depend_on_subgraph(L, &prod, &e, ap->g, (int)i, depth + 1, NULL);
			for (size_t j = 0; j < ap->n_graphs; j++)
				depend_on_subgraph(L, &prod, &e, ap->graphs[j], (int)i, depth + 1, NULL);
		}
	}
	int *order = arena_array(L->a, nn ? nn : 1, sizeof *order);
	int n = 0;
	bool sorted = true;
	for (size_t k = 0; k < e.n && sorted; k++)
		sorted = e.from[k] < e.to[k];
	if (sorted) {
		for (size_t i = 0; i < nn; i++)
			if (!dropped[i])
				order[n++] = (int)i;
		*count = n;
		return order;
	}
	/* Kahn's algorithm; the ready set is a min-heap of original positions. */
	int *indeg = arena_array(L->a, nn, sizeof *indeg);
	size_t *first = arena_array(L->a, nn + 1, sizeof *first);
	int *succ = arena_array(L->a, e.n ? e.n : 1, sizeof *succ);
	for (size_t k = 0; k < e.n; k++) {
		indeg[e.to[k]]++;
		first[e.from[k] + 1]++;
	}
	for (size_t i = 0; i < nn; i++)
		first[i + 1] += first[i];
	size_t *fill = arena_array(L->a, nn, sizeof *fill);
	memcpy(fill, first, nn * sizeof *fill);
	for (size_t k = 0; k < e.n; k++)
		succ[fill[e.from[k]]++] = e.to[k];
	int *heap = arena_array(L->a, nn, sizeof *heap);
	size_t nheap = 0;
	for (size_t i = 0; i < nn; i++) {
		if (dropped[i] || indeg[i] != 0)
			continue;
		heap[nheap++] = (int)i;  /* increasing: already a heap */
	}
	while (nheap > 0) {
		int top = heap[0];
		heap[0] = heap[--nheap];
		for (size_t j = 0;;) {  /* sift down */
			size_t l = 2 * j + 1, r = l + 1, m = j;
			if (l < nheap && heap[l] < heap[m])
				m = l;
			if (r < nheap && heap[r] < heap[m])
				m = r;
			if (m == j)
				break;
			int t = heap[j];
			heap[j] = heap[m];
			heap[m] = t;
			j = m;
		}
		order[n++] = top;
		for (size_t k = first[top]; k < first[top + 1]; k++) {
			int s = succ[k];
			if (--indeg[s] != 0)
				continue;
			size_t j = nheap++;  /* sift up */
			heap[j] = s;
			while (j > 0 && heap[(j - 1) / 2] > heap[j]) {
				int t = heap[j];
				heap[j] = heap[(j - 1) / 2];
				heap[(j - 1) / 2] = t;
				j = (j - 1) / 2;
			}
		}
	}
	size_t live = 0;
	for (size_t i = 0; i < nn; i++)
		live += !dropped[i];
	if ((size_t)n != live) {
		char names[600];
		size_t len = 0;
		int shown = 0;
		names[0] = 0;
		for (size_t i = 0; i < nn && len < sizeof names; i++) {
			if (dropped[i] || indeg[i] == 0)
				continue;
			if (shown == 6) {
				snprintf(names + len, sizeof names - len, ", ...");
				break;
			}
			len += (size_t)snprintf(names + len, sizeof names - len, "%s%zu \"%.60s\" (%.40s)",
			                        shown ? ", " : "", i, node_label(gp->node[i]),
			                        gp->node[i]->op_type ? gp->node[i]->op_type : "?");
			shown++;
		}
		diag_fail(L->d, KILN_INVALID_MODEL,
		          "graph \"%s\" has a cycle: nodes %s (and what reads them) wait on each other",
		          gname, names);
	}
	*count = n;
	return order;
}

static int64_t opset_of(Model *m, const char *domain, int domain_id)
{
	for (int i = 0; i < m->nopsets; i++) {
		const Opset *o = &m->opsets[i];
		if (domain_id != DOMAIN_OTHER ? o->domain_id == domain_id : strcmp(o->domain, domain) == 0)
			return o->version;
	}
	return -1;
}

static void load_node(Loader *L, Graph *g, const Onnx__NodeProto *np, int index)
{
	Node *n = &g->nodes[index];
	n->id = index;
	n->name = arena_strdup(L->a, str_or_empty(np->name));
	n->op_type = arena_strdup(L->a, str_or_empty(np->op_type));
	n->domain = arena_strdup(L->a, str_or_empty(np->domain));
	n->domain_id = domain_lookup(n->domain);
	int64_t opset = opset_of(L->m, n->domain, n->domain_id);
	if (opset < 0 && n->domain_id == DOMAIN_ONNX && L->m->ir_version < 3)
		opset = 1;  /* before IR 3 there were no opset imports */
	n->opset = opset < 0 ? 0 : opset > INT_MAX ? INT_MAX : (int)opset;
	if (!n->op_type[0])
		diag_fail_node(L->d, g, n, KILN_INVALID_MODEL, "node has no op_type");
	/* A domain kiln does not compile (QONNX's qonnx.custom_op.general, ...)
	 * needs no version: its nodes are listed as unsupported, by kiln check
	 * too, rather than the model refused for the missing import. */
	if (opset < 0 && n->domain_id != DOMAIN_OTHER)
		diag_fail_node(L->d, g, n, KILN_INVALID_MODEL,
		               "domain \"%s\" is used but the model has no opset_import for it",
		               n->domain[0] ? n->domain : "ai.onnx");
	n->op = n->domain_id == DOMAIN_OTHER ? NONE : op_lookup(n->op_type, n->domain_id);
	n->since = n->op == NONE ? 0 : op_resolve(n->op, n->opset);

	if (np->n_input > 65535 || np->n_output > 65535 || np->n_attribute > 65535)
		diag_fail_node(L->d, g, n, KILN_LIMIT, "node has too many inputs, outputs or attributes");
	n->nin = (int)np->n_input;
	n->in = arena_array(L->a, np->n_input, sizeof *n->in);
	for (size_t i = 0; i < np->n_input; i++) {
		const char *name = str_or_empty(np->input[i]);
		if (!name[0]) {
			n->in[i] = NONE;
			continue;
		}
		int id = graph_lookup(g, name);
		if (id == NONE)
			diag_fail_node(L->d, g, n, KILN_INVALID_MODEL,
			               "input %zu \"%s\" is not defined by any earlier node, graph input "
			               "or initializer",
			               i, name);
		n->in[i] = id;
		g->values[id].nuse++;
	}
	/* Attributes (and so subgraphs) before outputs: a body cannot see them. */
	n->nattrs = (int)np->n_attribute;
	n->attrs = arena_array(L->a, np->n_attribute, sizeof *n->attrs);
	for (size_t i = 0; i < np->n_attribute; i++) {
		load_attr(L, g, n, np->attribute[i], &n->attrs[i]);
		/* kiln.* attributes are the optimizer's own (fused members, epilogues,
		 * the parameters of kiln's fused ops): a model never sets them. */
		if (strncmp(n->attrs[i].name, "kiln.", 5) == 0)
			diag_fail_node(L->d, g, n, KILN_INVALID_MODEL,
			               "attribute \"%s\": names starting with \"kiln.\" are reserved for "
			               "kiln's optimizer", n->attrs[i].name);
	}

	n->nout = (int)np->n_output;
	n->out = arena_array(L->a, np->n_output, sizeof *n->out);
	for (size_t i = 0; i < np->n_output; i++) {
		const char *name = str_or_empty(np->output[i]);
		if (!name[0]) {
			n->out[i] = NONE;
			continue;
		}
		int prev = graph_lookup_local(g, name);
		if (prev != NONE && g->values[prev].kind == VAL_WEIGHT && !g->values[prev].is_overridable &&
		    n->domain_id == DOMAIN_ONNX && strcmp(n->op_type, "Constant") == 0 && n->nout == 1) {
			/* ONNX Runtime takes Constant nodes as initializers, the later one
			 * winning: the node replaces the initializer of its name. */
			model_warn(L->m, "graph \"%s\": Constant node %d \"%s\" produces \"%s\", also an "
			           "initializer; the Constant is kept, as ONNX Runtime does", g->name, index,
			           n->name, name);
			Value *pv = &g->values[prev];
			pv->kind = VAL_TEMP;
			pv->weight = NULL;
			pv->dtype = DT_UNDEFINED;
			pv->shape = (Shape){.rank = -1};
			pv->producer = index;
			g->ninitializers--;
			n->out[i] = prev;
			continue;
		}
		if (prev != NONE) {
			const Value *pv = &g->values[prev];
			if (pv->producer != NONE)
				diag_fail_node(L->d, g, n, KILN_INVALID_MODEL,
				               "output \"%s\" is already produced by node %d \"%s\"", name,
				               pv->producer, g->nodes[pv->producer].name);
			diag_fail_node(L->d, g, n, KILN_INVALID_MODEL, "output \"%s\" is already a graph %s",
			               name, pv->kind == VAL_WEIGHT ? "initializer" : "input");
		}
		int id = graph_add_value(g, name);
		g->values[id].kind = VAL_TEMP;
		g->values[id].producer = index;
		n->out[i] = id;
	}
}

static Graph *load_graph(Loader *L, const Onnx__GraphProto *gp, Graph *parent, int parent_node,
                         const char *parent_attr)
{
	Graph *g = arena_alloc(L->a, sizeof *g);
	g->name = arena_strdup(L->a, str_or_empty(gp->name));
	g->parent = parent;
	g->parent_node = parent_node;
	g->parent_attr = parent_attr;
	g->model = L->m;
	if (gp->n_node > INT_MAX / 2 || gp->n_initializer > INT_MAX / 4 || gp->n_input > INT_MAX / 4)
		diag_fail(L->d, KILN_LIMIT, "graph \"%s\" is too large", g->name);
	if (gp->n_node > (size_t)L->m->limits.max_nodes)
		diag_fail(L->d, KILN_LIMIT, "graph \"%s\" has %zu nodes, more than the limit of %lld "
		          "(raise it with --max-nodes)", g->name, gp->n_node,
		          (long long)L->m->limits.max_nodes);

	/* Initializers first: graph inputs with the same name are overridable defaults. */
	for (size_t i = 0; i < gp->n_initializer; i++) {
		const Onnx__TensorProto *tp = gp->initializer[i];
		const char *name = str_or_empty(tp->name);
		if (!name[0])
			diag_fail(L->d, KILN_INVALID_MODEL, "initializer %zu of graph \"%s\" has no name", i,
			          g->name);
		if (graph_lookup_local(g, name) != NONE)
			diag_fail(L->d, KILN_INVALID_MODEL, "initializer \"%s\" is defined twice", name);
		int id = graph_add_value(g, name);
		Value *v = &g->values[id];
		char what[300];
		snprintf(what, sizeof what, "initializer \"%.256s\"", name);
		Tensor t;
		tensor_from_proto(L, tp, &t, what);
		v->kind = VAL_WEIGHT;
		v->type = TK_TENSOR;
		v->dtype = t.dtype;
		v->shape = t.shape;
		v->weight = arena_alloc(L->a, sizeof *v->weight);
		*v->weight = t.w;
		g->ninitializers++;
	}
	for (size_t i = 0; i < gp->n_sparse_initializer; i++) {
		const Onnx__SparseTensorProto *sp = gp->sparse_initializer[i];
		const char *name = sp->values ? str_or_empty(sp->values->name) : "";
		if (!name[0])
			diag_fail(L->d, KILN_INVALID_MODEL, "sparse initializer %zu of graph \"%s\" has no name",
			          i, g->name);
		if (graph_lookup_local(g, name) != NONE)
			diag_fail(L->d, KILN_INVALID_MODEL, "initializer \"%s\" is defined twice", name);
		char what[300];
		snprintf(what, sizeof what, "sparse initializer \"%.256s\"", name);
		Tensor t;
		sparse_from_proto(L, sp, &t, what);
		int id = graph_add_value(g, name);
		Value *v = &g->values[id];
		v->kind = VAL_WEIGHT;
		v->type = TK_TENSOR;  /* densified: from here on, a weight like the others */
		v->dtype = t.dtype;
		v->shape = t.shape;
		v->weight = arena_alloc(L->a, sizeof *v->weight);
		*v->weight = t.w;
		g->ninitializers++;
	}

	g->ninputs = (int)gp->n_input;
	g->inputs = arena_array(L->a, gp->n_input, sizeof *g->inputs);
	for (size_t i = 0; i < gp->n_input; i++) {
		const Onnx__ValueInfoProto *vp = gp->input[i];
		const char *name = str_or_empty(vp->name);
		if (!name[0])
			diag_fail(L->d, KILN_INVALID_MODEL, "input %zu of graph \"%s\" has no name", i, g->name);
		int id = graph_lookup_local(g, name);
		if (id != NONE && g->values[id].kind == VAL_WEIGHT && !g->values[id].is_overridable) {
			g->values[id].is_overridable = true;
		} else if (id != NONE) {
			diag_fail(L->d, KILN_INVALID_MODEL, "graph input \"%s\" is declared twice", name);
		} else {
			id = graph_add_value(g, name);
			g->values[id].kind = VAL_INPUT;
			type_from_proto(L, vp->type, &g->values[id], 0);
		}
		g->inputs[i] = id;
	}

	int nnodes;
	const int *order = node_order(L, gp, g->name, graph_depth(g), &nnodes);
	g->nnodes = nnodes;
	g->nodes = arena_array(L->a, (size_t)nnodes, sizeof *g->nodes);
	for (int i = 0; i < nnodes; i++)
		load_node(L, g, gp->node[order[i]], i);

	/* value_info annotates intermediate values; entries naming nothing are ignored. */
	for (size_t i = 0; i < gp->n_value_info; i++) {
		const Onnx__ValueInfoProto *vp = gp->value_info[i];
		int id = graph_lookup_local(g, str_or_empty(vp->name));
		if (id != NONE && g->values[id].kind == VAL_TEMP)
			type_from_proto(L, vp->type, &g->values[id], 0);
	}

	g->noutputs = (int)gp->n_output;
	g->outputs = arena_array(L->a, gp->n_output, sizeof *g->outputs);
	for (size_t i = 0; i < gp->n_output; i++) {
		const Onnx__ValueInfoProto *vp = gp->output[i];
		const char *name = str_or_empty(vp->name);
		int id = name[0] ? graph_lookup(g, name) : NONE;
		if (id == NONE)
			diag_fail(L->d, KILN_INVALID_MODEL,
			          "output \"%s\" of graph \"%s\" is not produced by any node, input or "
			          "initializer",
			          name, g->name);
		Value *v = &g->values[id];
		v->is_output = true;
		if (v->kind == VAL_TEMP || v->kind == VAL_OUTER)
			type_from_proto(L, vp->type, v, 0);
		g->outputs[i] = id;
	}
	g->names = NULL;  /* lookups are over; the table is arena memory */
	return g;
}

/* ---- the model -------------------------------------------------------- */

/* --zipmap=tensor: a ZipMap's output, declared a sequence of maps, is the
 * float tensor it was made from (ops/ml.c); shape inference gives it its
 * shape. */
static void zipmap_as_tensor(Graph *g, void *user)
{
	(void)user;
	for (int i = 0; i < g->nnodes; i++) {
		const Node *n = &g->nodes[i];
		if (n->op != OP_ML_ZipMap || n->nout != 1 || n->out[0] == NONE)
			continue;
		Value *v = &g->values[n->out[0]];
		v->type = TK_TENSOR;
		v->dtype = DT_FLOAT;
		v->shape = (Shape){.rank = -1};
	}
}

static char *dir_of(Arena *a, const char *path)
{
	const char *slash = strrchr(path, '/');
	if (!slash)
		return arena_strdup(a, ".");
	if (slash == path)
		return arena_strdup(a, "/");
	char *d = arena_alloc(a, (size_t)(slash - path) + 1);
	memcpy(d, path, (size_t)(slash - path));
	return d;
}

Model *model_new(const char *path, Arena *a, Diag *d)
{
	Model *m = arena_alloc(a, sizeof *m);
	m->path = arena_strdup(a, path);
	m->dir = dir_of(a, path);
	m->arena = a;
	m->diag = d;
	m->limits = kiln_default_limits;
	return m;
}

void model_load(Model *m)
{
	Arena *a = m->arena;
	Diag *d = m->diag;
	const char *path = m->path;
	const uint16_t one = 1;
	if (*(const uint8_t *)&one != 1)
		diag_fail(d, KILN_UNSUPPORTED, "kiln needs a little-endian host to read ONNX files");
	Loader L = {.m = m, .a = a, .d = d};

	const Mapping *mp = map_file(&L, path, "");
	if (mp->bytes == 0)
		diag_fail(d, KILN_INVALID_MODEL, "empty file: not an ONNX model");
	L.file = mp->base;
	L.file_bytes = mp->bytes;

	size_t skel_len;
	uint8_t *skel = wire_skeleton(&onnx__model_proto__descriptor, L.file, (size_t)L.file_bytes,
	                              &skel_len, m->limits.max_depth, a, d);
	ProtobufCAllocator alloc = {.alloc = pb_alloc, .free = pb_free, .allocator_data = &L};
	Onnx__ModelProto *mpb = onnx__model_proto__unpack(&alloc, skel_len, skel);
	if (!mpb) {
		if (L.alloc_failed)
			diag_fail(d, KILN_LIMIT, "compiler memory limit of %zu MiB exceeded while parsing "
			          "(see --max-memory)", a->cap_bytes >> 20);
		diag_fail(d, KILN_INVALID_MODEL, "not a valid ONNX file: protobuf-c could not unpack it");
	}
	if (!mpb->graph)
		diag_fail(d, KILN_INVALID_MODEL,
		          "not an ONNX model: no graph (an empty or non-ONNX protobuf file?)");
	m->ir_version = mpb->has_ir_version ? mpb->ir_version : 0;
	m->producer_name = arena_strdup(a, str_or_empty(mpb->producer_name));
	m->producer_version = arena_strdup(a, str_or_empty(mpb->producer_version));

	m->nopsets = (int)mpb->n_opset_import;
	m->opsets = arena_array(a, mpb->n_opset_import, sizeof *m->opsets);
	for (size_t i = 0; i < mpb->n_opset_import; i++) {
		const Onnx__OperatorSetIdProto *op = mpb->opset_import[i];
		Opset *o = &m->opsets[i];
		o->domain = arena_strdup(a, str_or_empty(op->domain));
		o->domain_id = domain_lookup(o->domain);
		o->version = op->has_version ? op->version : 0;
		if (o->version < 1)
			diag_fail(d, KILN_INVALID_MODEL, "opset_import of domain \"%s\" has version %lld",
			          o->domain, (long long)o->version);
		for (size_t k = 0; k < i; k++)
			if (strcmp(m->opsets[k].domain, o->domain) == 0 ||
			    (o->domain_id != DOMAIN_OTHER && m->opsets[k].domain_id == o->domain_id))
				diag_fail(d, KILN_INVALID_MODEL, "domain \"%s\" is imported twice", o->domain);
	}
	m->nfunctions = (int)mpb->n_functions;
	m->functions = arena_array(a, mpb->n_functions, sizeof *m->functions);
	for (size_t i = 0; i < mpb->n_functions; i++)
		m->functions[i] = arena_printf(a, "%s:%s", str_or_empty(mpb->functions[i]->domain),
		                               str_or_empty(mpb->functions[i]->name));

	m->graph = load_graph(&L, mpb->graph, NULL, NONE, NULL);
	if (m->zipmap_tensor)
		graph_walk(m->graph, zipmap_as_tensor, NULL);
}

/* ---- standalone tensors (test data) ----------------------------------- */

void tensor_load_file(Model *m, const char *path, Tensor *t)
{
	Loader L = {.m = m, .a = m->arena, .d = m->diag};
	const Mapping *mp = map_file(&L, path, "tensor file ");
	L.file = mp->base;
	L.file_bytes = mp->bytes;
	size_t skel_len;
	uint8_t *skel = mp->bytes ? wire_skeleton(&onnx__tensor_proto__descriptor, L.file,
	                                          (size_t)L.file_bytes, &skel_len, 0, L.a, L.d)
	                          : NULL;
	ProtobufCAllocator alloc = {.alloc = pb_alloc, .free = pb_free, .allocator_data = &L};
	Onnx__TensorProto *tp = onnx__tensor_proto__unpack(&alloc, mp->bytes ? skel_len : 0,
	                                                   skel ? skel : (const uint8_t *)"");
	if (!tp)
		diag_fail(L.d, L.alloc_failed ? KILN_LIMIT : KILN_INVALID_MODEL,
		          "%s is not a valid TensorProto file", path);
	char what[300];
	snprintf(what, sizeof what, "tensor file %.256s", path);
	tensor_from_proto(&L, tp, t, what);
}

/*
 * _kiln.c - the C half of the `kiln` Python module (python/kiln/__init__.py
 * is the other): open a model's shared object (`kiln compile --shared`),
 * describe its inputs and outputs, and run it on any batch size through
 * kiln_run, with buffers read and written in place.
 *
 * A Model holds the dlopen handle and the descriptor. Calls read every input
 * through the buffer protocol (C-contiguous, the descriptor's element type
 * and shape, else a TypeError or ValueError naming the input), write into
 * new numpy arrays (memoryviews without numpy) or the caller's out=
 * buffers, and run kiln_run (or, model.run_lengths, kiln_run_lengths: samples
 * of their own lengths in a bucketed model) with the GIL released. Each
 * thread gets its own
 * kiln_context per model (run.h: contexts are what a call mutates), kept in
 * a per-thread list and freed when the thread ends or the model is freed,
 * whichever comes first. The module links its own libkiln.a (hidden) for
 * kiln_run; the model's code and kernels are the shared object's own.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "kiln/run.h"

/* ---- element types ---------------------------------------------------- */

/* Element types as Python sees them: the ONNX name, the numpy dtype of the
 * buffers (bit patterns for the types numpy lacks), the buffer-protocol
 * format and item size. int4/uint4 (packed two a byte) are not offered. */
typedef struct DType {
	int dtype;
	const char *onnx, *numpy;
	char fmt, kind;            /* kind: f float, i signed, u unsigned, b bool */
	int size;
} DType;

static const DType dtypes[] = {
	{KILN_FLOAT32, "float32", "float32", 'f', 'f', 4},
	{KILN_FLOAT64, "float64", "float64", 'd', 'f', 8},
	{KILN_FLOAT16, "float16", "float16", 'e', 'f', 2},
	{KILN_INT8, "int8", "int8", 'b', 'i', 1},
	{KILN_INT16, "int16", "int16", 'h', 'i', 2},
	{KILN_INT32, "int32", "int32", 'i', 'i', 4},
	{KILN_INT64, "int64", "int64", 'q', 'i', 8},
	{KILN_UINT8, "uint8", "uint8", 'B', 'u', 1},
	{KILN_UINT16, "uint16", "uint16", 'H', 'u', 2},
	{KILN_UINT32, "uint32", "uint32", 'I', 'u', 4},
	{KILN_UINT64, "uint64", "uint64", 'Q', 'u', 8},
	{KILN_BOOL, "bool", "bool", '?', 'b', 1},
	{KILN_BFLOAT16, "bfloat16", "uint16", 'H', 'u', 2},
	{KILN_FLOAT8E4M3FN, "float8e4m3fn", "uint8", 'B', 'u', 1},
	{KILN_FLOAT8E4M3FNUZ, "float8e4m3fnuz", "uint8", 'B', 'u', 1},
	{KILN_FLOAT8E5M2, "float8e5m2", "uint8", 'B', 'u', 1},
	{KILN_FLOAT8E5M2FNUZ, "float8e5m2fnuz", "uint8", 'B', 'u', 1},
};
enum { NDTYPES = sizeof dtypes / sizeof dtypes[0] };

static const DType *dtype_of(int dtype)
{
	for (int i = 0; i < NDTYPES; i++)
		if (dtypes[i].dtype == dtype)
			return &dtypes[i];
	return NULL;
}

/* A buffer's format ("f", "<f", "=l", ...) as a kind and item size; 0 kind
 * if it is not one plain native-order scalar. */
static char format_kind(const char *fmt, Py_ssize_t itemsize, int *size)
{
	*size = (int)itemsize;
	if (!fmt)
		return 'u';  /* bytes-like without a format: unsigned bytes */
	if (*fmt == '@' || *fmt == '=' || *fmt == '<')
		fmt++;
	if (!fmt[0] || fmt[1])
		return 0;
	switch (fmt[0]) {
	case 'e': case 'f': case 'd': return 'f';
	case 'b': case 'h': case 'i': case 'l': case 'q': case 'n': return 'i';
	case 'B': case 'H': case 'I': case 'L': case 'Q': case 'N': return 'u';
	case '?': return 'b';
	default: return 0;
	}
}

/* Does a buffer of this format hold the element type? float16 also takes
 * uint16 bit patterns. */
static bool format_fits(const DType *t, const Py_buffer *v)
{
	int size;
	char kind = format_kind(v->format, v->itemsize, &size);
	if (size != t->size)
		return false;
	return kind == t->kind || (t->dtype == KILN_FLOAT16 && kind == 'u');
}

/* ---- module state ------------------------------------------------------ */

static PyObject *kiln_error;        /* kiln.Error, a RuntimeError */
static PyObject *length_error;      /* kiln.LengthError: kiln.Error and ValueError */
static PyTypeObject tensor_info_type;
static PyObject *numpy_empty;       /* numpy.empty, or Py_None without numpy */
static PyObject *numpy_dtype[NDTYPES];

/* numpy.empty and the dtypes, imported on the first call that needs them;
 * false (no error set) where numpy cannot be imported. */
static bool have_numpy(void)
{
	if (numpy_empty)
		return numpy_empty != Py_None;
	PyObject *np = PyImport_ImportModule("numpy");
	if (!np) {
		PyErr_Clear();
		numpy_empty = Py_None;
		Py_INCREF(Py_None);
		return false;
	}
	PyObject *empty = PyObject_GetAttrString(np, "empty");
	PyObject *dtype = PyObject_GetAttrString(np, "dtype");
	bool ok = empty && dtype;
	for (int i = 0; ok && i < NDTYPES; i++)
		ok = (numpy_dtype[i] = PyObject_CallFunction(dtype, "s", dtypes[i].numpy)) != NULL;
	Py_XDECREF(dtype);
	Py_DECREF(np);
	if (!ok) {
		PyErr_Clear();
		Py_XDECREF(empty);
		for (int i = 0; i < NDTYPES; i++)
			Py_CLEAR(numpy_dtype[i]);
		numpy_empty = Py_None;
		Py_INCREF(Py_None);
		return false;
	}
	numpy_empty = empty;
	return true;
}

/* ---- contexts, one per thread and model ------------------------------- */

/* A context lives in two lists: its thread's and its model's. The thread
 * frees its contexts when it ends (a pthread key's destructor); a model
 * frees its own when it is deallocated. Both lists change under one lock;
 * a thread finds its context for a model through a one-entry cache, then
 * its own list. Models are told apart by a serial number that is never
 * reused, so a cache entry of a freed model never matches. */
typedef struct Slot {
	struct Slot *tnext, **tprev;     /* the thread's list */
	struct Slot *mnext, **mprev;     /* the model's list */
	uint64_t serial;
	kiln_context *ctx;
} Slot;

typedef struct ThreadSlots {
	Slot *head;
} ThreadSlots;

static pthread_mutex_t slots_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_key_t slots_key;
static uint64_t next_serial = 1;     /* under the GIL */
static long live_slots;              /* contexts alive, under slots_lock (live_contexts()) */
static _Thread_local ThreadSlots *tl_slots;
static _Thread_local uint64_t tl_serial;
static _Thread_local kiln_context *tl_ctx;

static void slot_free(Slot *s)
{
	*s->tprev = s->tnext;
	if (s->tnext)
		s->tnext->tprev = s->tprev;
	*s->mprev = s->mnext;
	if (s->mnext)
		s->mnext->mprev = s->mprev;
	kiln_context_destroy(s->ctx);
	free(s);
	live_slots--;
}

/* The key's destructor: a thread ends. */
static void thread_slots_free(void *p)
{
	ThreadSlots *ts = p;
	pthread_mutex_lock(&slots_lock);
	while (ts->head)
		slot_free(ts->head);
	pthread_mutex_unlock(&slots_lock);
	free(ts);
}

/* ---- TensorInfo -------------------------------------------------------- */

static PyStructSequence_Field tensor_info_fields[] = {
	{"name", "the ONNX name"},
	{"dtype", "numpy dtype name of the buffers (bit patterns for bfloat16, float8)"},
	{"shape", "dims, None at the batch axis"},
	{"batch_axis", "the batch axis, or None for a tensor that does not follow the batch"},
	{"element_type", "the ONNX element type (float32, bfloat16, float8e4m3fn, ...)"},
	{"length_axis", "the axis that is the bucketed dim (run_lengths: the caller's lmax), "
	                "or None"},
	{NULL, NULL},
};

static PyStructSequence_Desc tensor_info_desc = {
	"kiln.TensorInfo",
	"An input or output of a model: name, dtype, shape (None at the batch axis),\n"
	"batch_axis (None if the tensor does not follow the batch), element_type;\n"
	"length_axis (by name only): the bucketed dim's axis, or None.",
	tensor_info_fields, 5,
};

static PyObject *tensor_info(const kiln_tensor_desc *t, int length_axis)
{
	const DType *dt = dtype_of(t->dtype);
	PyObject *info = PyStructSequence_New(&tensor_info_type);
	PyObject *shape = PyTuple_New(t->rank);
	if (!info || !shape)
		goto fail;
	for (int d = 0; d < t->rank; d++) {
		PyObject *v = d == t->batch_axis ? Py_NewRef(Py_None) : PyLong_FromLongLong(t->dims[d]);
		if (!v)
			goto fail;
		PyTuple_SET_ITEM(shape, d, v);
	}
	PyObject *f[6] = {
		PyUnicode_FromString(t->name), PyUnicode_FromString(dt ? dt->numpy : "packed"), shape,
		t->batch_axis >= 0 ? PyLong_FromLong(t->batch_axis) : Py_NewRef(Py_None),
		PyUnicode_FromString(dt ? dt->onnx : t->dtype == KILN_INT4 ? "int4" : "uint4"),
		length_axis >= 0 ? PyLong_FromLong(length_axis) : Py_NewRef(Py_None)};
	shape = NULL;
	for (int i = 0; i < 6; i++) {
		if (!f[i]) {
			for (int k = i; k < 6; k++)
				Py_XDECREF(f[k]);
			goto fail;
		}
		PyStructSequence_SET_ITEM(info, i, f[i]);
	}
	return info;
fail:
	Py_XDECREF(info);
	Py_XDECREF(shape);
	return NULL;
}

/* ---- Model ------------------------------------------------------------- */

typedef struct Model {
	PyObject_HEAD
	vectorcallfunc vectorcall;
	void *so;
	const kiln_model *m;
	uint64_t serial;
	Slot *slots;                     /* every thread's context for this model */
	PyObject *path, *sha256, *entry; /* str, str, str or None (the name given to load) */
	PyObject *inputs, *outputs;      /* tuples of TensorInfo */
	PyObject *weakrefs;
} Model;

/* This thread's context for the model, made on first use. */
static kiln_context *model_context(Model *self)
{
	if (tl_serial == self->serial)
		return tl_ctx;
	kiln_context *ctx = NULL;
	int st = KILN_OK;
	pthread_mutex_lock(&slots_lock);
	if (!tl_slots) {
		tl_slots = calloc(1, sizeof *tl_slots);
		if (!tl_slots || pthread_setspecific(slots_key, tl_slots) != 0) {
			free(tl_slots);
			tl_slots = NULL;
			st = KILN_NO_MEMORY;
		}
	}
	for (Slot *s = tl_slots ? tl_slots->head : NULL; s && !ctx; s = s->tnext)
		if (s->serial == self->serial)
			ctx = s->ctx;
	if (!ctx && st == KILN_OK) {
		Slot *s = calloc(1, sizeof *s);
		st = s ? kiln_context_create(&ctx, self->m) : KILN_NO_MEMORY;
		if (st == KILN_OK) {
			s->serial = self->serial;
			s->ctx = ctx;
			s->tnext = tl_slots->head;
			s->tprev = &tl_slots->head;
			if (s->tnext)
				s->tnext->tprev = &s->tnext;
			tl_slots->head = s;
			s->mnext = self->slots;
			s->mprev = &self->slots;
			if (s->mnext)
				s->mnext->mprev = &s->mnext;
			self->slots = s;
			live_slots++;
		} else {
			free(s);
			ctx = NULL;
		}
	}
	pthread_mutex_unlock(&slots_lock);
	if (!ctx) {
		PyErr_Format(st == KILN_NO_MEMORY ? PyExc_MemoryError : kiln_error,
		             "model '%s': cannot make a context (%llu bytes): %s", self->m->name,
		             (unsigned long long)self->m->context_bytes, kiln_status_string(st));
		return NULL;
	}
	tl_serial = self->serial;
	tl_ctx = ctx;
	return ctx;
}

static PyObject *model_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf,
                                  PyObject *kwnames);

/* Model(path, entry=None): dlopen path and find its descriptor: the
 * kiln_shared_model() of `kiln compile --shared`, else ENTRY_model. Python's
 * kiln.load() computes the hash and passes it as sha256. */
static PyObject *model_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = {"path", "entry", "sha256", NULL};
	PyObject *path_obj, *entry = Py_None, *sha = Py_None;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "U|OO", kwlist, &path_obj, &entry, &sha))
		return NULL;
	if (entry != Py_None && !PyUnicode_Check(entry))
		return PyErr_Format(PyExc_TypeError, "entry must be a str or None");
	const char *path = PyUnicode_AsUTF8(path_obj);
	if (!path)
		return NULL;
	void *so;
	Py_BEGIN_ALLOW_THREADS
	so = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	Py_END_ALLOW_THREADS
	if (!so) {
		const char *why = dlerror();
		return PyErr_Format(PyExc_OSError, "kiln.load: cannot open %s: %s", path,
		                    why ? why : "dlopen failed");
	}
	const kiln_model *m = NULL;
	const char *sym = "kiln_shared_model()";
	if (entry == Py_None) {
		const kiln_model *(*fn)(void);
		*(void **)&fn = dlsym(so, "kiln_shared_model");
		m = fn ? fn() : NULL;
	} else {
		const char *e = PyUnicode_AsUTF8(entry);
		PyObject *name = e ? PyUnicode_FromFormat("%s_model", e) : NULL;
		sym = name ? PyUnicode_AsUTF8(name) : NULL;
		m = sym ? dlsym(so, sym) : NULL;
		if (!sym) {
			Py_XDECREF(name);
			dlclose(so);
			return NULL;
		}
		if (!m) {
			PyErr_Format(PyExc_ValueError,
			             "kiln.load: %s exports no %s (the model must be compiled with "
			             "kiln compile --export, or --shared)", path, sym);
			Py_DECREF(name);
			dlclose(so);
			return NULL;
		}
		Py_DECREF(name);
	}
	if (!m) {
		dlclose(so);
		return PyErr_Format(PyExc_ValueError,
		                    "kiln.load: %s exports no %s: not built by kiln compile --shared "
		                    "(for a library exporting NAME_model, pass entry='NAME')",
		                    path, sym);
	}
	if (m->kiln_version != KILN_VERSION_NUM || m->struct_bytes != sizeof(kiln_model)) {
		dlclose(so);
		return PyErr_Format(kiln_error,
		                    "kiln.load: %s was compiled by kiln %d.%d.%d; this module is "
		                    "kiln %d.%d.%d: compile it again", path,
		                    (int)m->kiln_version / 10000, (int)m->kiln_version / 100 % 100,
		                    (int)m->kiln_version % 100, KILN_VERSION_MAJOR, KILN_VERSION_MINOR,
		                    KILN_VERSION_PATCH);
	}
	if (m->ninputs > KILN_MAX_IO || m->noutputs > KILN_MAX_IO) {
		dlclose(so);
		return PyErr_Format(kiln_error, "kiln.load: %s: more than %d inputs or outputs",
		                    path, KILN_MAX_IO);
	}
	Model *self = (Model *)type->tp_alloc(type, 0);
	if (!self) {
		dlclose(so);
		return NULL;
	}
	self->vectorcall = model_vectorcall;
	self->so = so;
	self->m = m;
	self->serial = next_serial++;
	self->path = Py_NewRef(path_obj);
	self->sha256 = Py_NewRef(sha);
	self->entry = Py_NewRef(entry);
	self->inputs = PyTuple_New(m->ninputs);
	self->outputs = PyTuple_New(m->noutputs);
	if (!self->inputs || !self->outputs) {
		Py_DECREF(self);
		return NULL;
	}
	for (int i = 0; i < m->ninputs + m->noutputs; i++) {
		bool in = i < m->ninputs;
		PyObject *info = tensor_info(in ? &m->inputs[i] : &m->outputs[i - m->ninputs],
		                             m->nbuckets >= 2 && m->bucket_axis ? m->bucket_axis[i] : -1);
		if (!info) {
			Py_DECREF(self);
			return NULL;
		}
		PyTuple_SET_ITEM(in ? self->inputs : self->outputs, in ? i : i - m->ninputs, info);
	}
	return (PyObject *)self;
}

static void model_dealloc(Model *self)
{
	if (self->weakrefs)
		PyObject_ClearWeakRefs((PyObject *)self);
	pthread_mutex_lock(&slots_lock);
	while (self->slots)
		slot_free(self->slots);
	pthread_mutex_unlock(&slots_lock);
	Py_XDECREF(self->path);
	Py_XDECREF(self->sha256);
	Py_XDECREF(self->entry);
	Py_XDECREF(self->inputs);
	Py_XDECREF(self->outputs);
	if (self->so)
		dlclose(self->so);
	PyTypeObject *type = Py_TYPE(self);
	type->tp_free((PyObject *)self);
	Py_DECREF(type);   /* instances of a heap type hold a reference to it */
}

/* "(n, 16)" for an error message: the expected shape, n at the batch axis
 * (or its value once known, n >= 0), and lmax at the bucketed axis laxis
 * (run_lengths; -1: none) likewise. */
static PyObject *shape_text(const kiln_tensor_desc *t, int64_t n, int laxis, int64_t lmax)
{
	PyObject *parts = PyList_New(0);
	if (!parts)
		return NULL;
	for (int d = 0; d < t->rank; d++) {
		int64_t v = d == t->batch_axis ? n : d == laxis ? lmax : t->dims[d];
		PyObject *s = v >= 0 ? PyUnicode_FromFormat("%lld", (long long)v)
		              : PyUnicode_FromString(d == t->batch_axis ? "n" : "lmax");
		if (!s || PyList_Append(parts, s) != 0) {
			Py_XDECREF(s);
			Py_DECREF(parts);
			return NULL;
		}
		Py_DECREF(s);
	}
	PyObject *sep = PyUnicode_FromString(", ");
	PyObject *body = sep ? PyUnicode_Join(sep, parts) : NULL;
	PyObject *r = body ? PyUnicode_FromFormat(t->rank == 1 ? "(%U,)" : "(%U)", body) : NULL;
	Py_XDECREF(sep);
	Py_XDECREF(body);
	Py_DECREF(parts);
	return r;
}

static PyObject *view_shape_text(const Py_buffer *v)
{
	PyObject *shape = PyTuple_New(v->ndim);
	for (int d = 0; shape && d < v->ndim; d++) {
		PyObject *x = PyLong_FromSsize_t(v->shape ? v->shape[d] : v->len / v->itemsize);
		if (!x) {
			Py_CLEAR(shape);
			break;
		}
		PyTuple_SET_ITEM(shape, d, x);
	}
	PyObject *r = shape ? PyObject_Str(shape) : NULL;
	Py_XDECREF(shape);
	return r;
}

/* A buffer's dims; a buffer without a shape is one dimension of bytes. */
static Py_ssize_t view_dim(const Py_buffer *v, int d)
{
	return v->shape ? v->shape[d] : v->len / (v->itemsize ? v->itemsize : 1);
}

typedef struct Call {
	Model *self;
	const kiln_model *m;
	PyObject *in_obj[KILN_MAX_IO];
	Py_buffer in_view[KILN_MAX_IO];
	int nin_views;
	PyObject *out_obj[KILN_MAX_IO];
	Py_buffer out_view[KILN_MAX_IO];
	int nout_views;
	int64_t n;
	/* run_lengths: per input, then per output, the bucketed axis (-1: none);
	 * NULL for a plain call. lmax: the extent on it, -1 until an input says. */
	const int *laxis;
	int64_t lmax;
	Py_buffer lengths_view;
	bool have_lengths_view;
	int64_t *lengths_owned;      /* PyMem: lengths converted to int64 */
} Call;

static void call_release(Call *c)
{
	for (int i = 0; i < c->nin_views; i++)
		PyBuffer_Release(&c->in_view[i]);
	for (int i = 0; i < c->nout_views; i++)
		PyBuffer_Release(&c->out_view[i]);
	for (int i = 0; i < c->m->noutputs; i++)
		Py_CLEAR(c->out_obj[i]);
	if (c->have_lengths_view)
		PyBuffer_Release(&c->lengths_view);
	PyMem_Free(c->lengths_owned);
}

/* Check a buffer against tensor k (input k, or output k - ninputs) t:
 * element type, rank, contiguity and (with c->n known, or setting it from
 * the batch axis; c->lmax likewise at a bucketed axis) the dims. what is
 * "input" or "out"; returns -1 with an error set. */
static int check_view(Call *c, int k, const kiln_tensor_desc *t, Py_buffer *v, const char *what)
{
	int laxis = c->laxis ? c->laxis[k] : -1;
	const DType *dt = dtype_of(t->dtype);
	const char *model = c->m->name;
	if (!format_fits(dt, v))
		return PyErr_Format(PyExc_TypeError,
		                    "model '%s' %s '%s': expected %s%s, got a buffer of format '%s' "
		                    "(item size %zd)", model, what, t->name, dt->numpy,
		                    dt->dtype == KILN_FLOAT16 ? " (or uint16 bit patterns)" : "",
		                    v->format ? v->format : "B", v->itemsize), -1;
	bool shape_ok = v->ndim == t->rank;
	if (shape_ok && t->batch_axis >= 0 && c->n < 0)
		c->n = view_dim(v, t->batch_axis);
	if (shape_ok && laxis >= 0 && c->lmax < 0)
		c->lmax = view_dim(v, laxis);
	for (int d = 0; shape_ok && d < t->rank; d++)
		shape_ok = view_dim(v, d) == (d == t->batch_axis ? c->n : d == laxis ? c->lmax
		                                                                       : t->dims[d]);
	if (!shape_ok) {
		PyObject *want = shape_text(t, c->n, laxis, c->lmax), *got = view_shape_text(v);
		if (want && got)
			PyErr_Format(PyExc_ValueError, "model '%s' %s '%s': expected shape %U %s, got %U",
			             model, what, t->name, want, dt->numpy, got);
		Py_XDECREF(want);
		Py_XDECREF(got);
		return -1;
	}
	if (!PyBuffer_IsContiguous(v, 'C'))
		return PyErr_Format(PyExc_ValueError, "model '%s' %s '%s': not C-contiguous (%s)",
		                    model, what, t->name,
		                    *what == 'i' ? "numpy.ascontiguousarray makes a copy that is"
		                                 : "outputs are written in place"), -1;
	return 0;
}

/* Does the type of the object offer the buffer protocol? */
static int get_view(PyObject *obj, Py_buffer *v, int flags, const Call *c,
                    const kiln_tensor_desc *t, const char *what)
{
	if (PyObject_GetBuffer(obj, v, flags) == 0)
		return 0;
	if (flags & PyBUF_WRITABLE && PyObject_CheckBuffer(obj)) {
		PyErr_Clear();
		PyErr_Format(PyExc_ValueError, "model '%s' %s '%s': the buffer is read-only",
		             c->m->name, what, t->name);
		return -1;
	}
	if (PyObject_CheckBuffer(obj))
		return -1;  /* the exporter's own error */
	PyErr_Clear();
	PyErr_Format(PyExc_TypeError, "model '%s' %s '%s': expected an array of %s (an object "
	             "with the buffer protocol, e.g. a numpy array), got %s", c->m->name, what,
	             t->name, dtype_of(t->dtype) ? dtype_of(t->dtype)->numpy : "?",
	             Py_TYPE(obj)->tp_name);
	return -1;
}

/* Is a str key the (UTF-8) name? */
static bool is_name(PyObject *key, const char *name)
{
	Py_ssize_t len;
	const char *k = PyUnicode_Check(key) ? PyUnicode_AsUTF8AndSize(key, &len) : NULL;
	if (!k) {
		PyErr_Clear();
		return false;
	}
	return (size_t)len == strlen(name) && memcmp(k, name, (size_t)len) == 0;
}

/* A new output array for tensor t at n rows (and lmax on the bucketed axis
 * laxis, -1: none): numpy.empty, else a memoryview of a bytearray cast to
 * the format and shape (1-D for an empty one: a memoryview cannot have a 0
 * dim). */
static PyObject *new_output(const kiln_tensor_desc *t, int64_t n, int laxis, int64_t lmax)
{
	const DType *dt = dtype_of(t->dtype);
	PyObject *shape = PyTuple_New(t->rank);
	if (!shape)
		return NULL;
	Py_ssize_t elems = 1;
	for (int d = 0; d < t->rank; d++) {
		int64_t v = d == t->batch_axis ? n : d == laxis ? lmax : t->dims[d];
		elems *= (Py_ssize_t)v;
		PyObject *x = PyLong_FromLongLong(v);
		if (!x) {
			Py_DECREF(shape);
			return NULL;
		}
		PyTuple_SET_ITEM(shape, d, x);
	}
	PyObject *r;
	if (have_numpy()) {
		PyObject *a[2] = {shape, numpy_dtype[dt - dtypes]};
		r = PyObject_Vectorcall(numpy_empty, a, 2, NULL);
	} else {
		PyObject *bytes = PyByteArray_FromStringAndSize(NULL, elems * dt->size);
		PyObject *mv = bytes ? PyMemoryView_FromObject(bytes) : NULL;
		char fmt[2] = {dt->fmt, 0};
		r = !mv ? NULL
		    : elems && t->rank ? PyObject_CallMethod(mv, "cast", "sO", fmt, shape)
		                       : PyObject_CallMethod(mv, "cast", "s", fmt);
		Py_XDECREF(mv);
		Py_XDECREF(bytes);
	}
	Py_DECREF(shape);
	return r;
}

/* out=: one buffer (a single output), a sequence in output order, or a dict
 * by name. Fills c->out_obj with new references. */
static int take_out(Call *c, PyObject *out)
{
	const kiln_model *m = c->m;
	if (PyDict_Check(out)) {
		Py_ssize_t pos = 0;
		PyObject *k, *v;
		while (PyDict_Next(out, &pos, &k, &v)) {
			int i = 0;
			while (i < m->noutputs && !is_name(k, m->outputs[i].name))
				i++;
			if (i == m->noutputs)
				return PyErr_Format(PyExc_TypeError, "model '%s' has no output %R", m->name,
				                    k), -1;
			c->out_obj[i] = Py_NewRef(v);
		}
		for (int i = 0; i < m->noutputs; i++)
			if (!c->out_obj[i])
				return PyErr_Format(PyExc_TypeError, "model '%s': out= names no buffer for "
				                    "output '%s'", m->name, m->outputs[i].name), -1;
		return 0;
	}
	if (m->noutputs == 1 && PyObject_CheckBuffer(out)) {
		c->out_obj[0] = Py_NewRef(out);
		return 0;
	}
	PyObject *seq = PySequence_Fast(out, "out= takes a buffer, a sequence of buffers in output "
	                                     "order or a dict by output name");
	if (!seq)
		return -1;
	if (PySequence_Fast_GET_SIZE(seq) != m->noutputs) {
		PyErr_Format(PyExc_TypeError, "model '%s' has %d outputs; out= gives %zd", m->name,
		             m->noutputs, PySequence_Fast_GET_SIZE(seq));
		Py_DECREF(seq);
		return -1;
	}
	for (int i = 0; i < m->noutputs; i++)
		c->out_obj[i] = Py_NewRef(PySequence_Fast_GET_ITEM(seq, i));
	Py_DECREF(seq);
	return 0;
}

static bool overlaps(const Py_buffer *a, const Py_buffer *b)
{
	const char *pa = a->buf, *pb = b->buf;
	return a->len && b->len && pa < pb + b->len && pb < pa + a->len;
}

/* lengths for run_lengths: a 1-D buffer of integers (read in place when it
 * is aligned int64) or a sequence of ints. Sets c->n and returns the
 * int64 array (c->lengths_owned or the buffer), NULL with an error set. */
static const int64_t *take_lengths(Call *c, PyObject *obj)
{
	const char *model = c->m->name;
	if (PyObject_CheckBuffer(obj)) {
		Py_buffer *v = &c->lengths_view;
		if (PyObject_GetBuffer(obj, v, PyBUF_RECORDS_RO) != 0)
			return NULL;
		c->have_lengths_view = true;
		int size;
		char kind = format_kind(v->format, v->itemsize, &size);
		if ((kind != 'i' && kind != 'u') || v->ndim != 1 || !PyBuffer_IsContiguous(v, 'C'))
			return PyErr_Format(PyExc_TypeError, "model '%s' run_lengths: lengths must be "
			                    "a 1-D contiguous array of integers or a sequence of ints, "
			                    "got a buffer of format '%s' and %d dims", model,
			                    v->format ? v->format : "B", v->ndim), NULL;
		c->n = v->len / size;
		if (kind == 'i' && size == 8 && (uintptr_t)v->buf % _Alignof(int64_t) == 0)
			return v->buf;
		c->lengths_owned = PyMem_Malloc((size_t)(c->n ? c->n : 1) * sizeof(int64_t));
		if (!c->lengths_owned)
			return PyErr_NoMemory(), NULL;
		const unsigned char *p = v->buf;
		for (int64_t i = 0; i < c->n; i++, p += size) {
			uint64_t u = 0;
			int64_t x = 0;
			switch (size * (kind == 'i' ? 1 : -1)) {
			case 1: { int8_t t; memcpy(&t, p, 1); x = t; break; }
			case 2: { int16_t t; memcpy(&t, p, 2); x = t; break; }
			case 4: { int32_t t; memcpy(&t, p, 4); x = t; break; }
			case 8: memcpy(&x, p, 8); break;
			case -1: { uint8_t t; memcpy(&t, p, 1); x = t; break; }
			case -2: { uint16_t t; memcpy(&t, p, 2); x = t; break; }
			case -4: { uint32_t t; memcpy(&t, p, 4); x = t; break; }
			default:
				memcpy(&u, p, 8);
				x = u > INT64_MAX ? INT64_MAX : (int64_t)u;
			}
			c->lengths_owned[i] = x;
		}
		return c->lengths_owned;
	}
	PyObject *seq = PySequence_Fast(obj, "lengths must be a 1-D array of integers or a "
	                                     "sequence of ints");
	if (!seq)
		return NULL;
	c->n = PySequence_Fast_GET_SIZE(seq);
	c->lengths_owned = PyMem_Malloc((size_t)(c->n ? c->n : 1) * sizeof(int64_t));
	for (int64_t i = 0; c->lengths_owned && i < c->n; i++) {
		PyObject *x = PySequence_Fast_GET_ITEM(seq, i);
		long long v = PyIndex_Check(x) ? PyLong_AsLongLong(x) : -1;
		if (!PyIndex_Check(x))
			PyErr_Format(PyExc_TypeError, "model '%s' run_lengths: lengths[%lld] is %s, "
			             "not an int", model, (long long)i, Py_TYPE(x)->tp_name);
		if (v == -1 && PyErr_Occurred()) {
			Py_DECREF(seq);
			return NULL;
		}
		c->lengths_owned[i] = v;
	}
	Py_DECREF(seq);
	if (!c->lengths_owned)
		return PyErr_NoMemory(), NULL;
	return c->lengths_owned;
}

/* Every length within 0..lmax and the largest bucket, else kiln.LengthError
 * naming the first one that is not. */
static int check_lengths(const Call *c, const int64_t *lengths)
{
	const kiln_model *m = c->m;
	int64_t top = m->buckets[m->nbuckets - 1];
	for (int64_t i = 0; i < c->n; i++) {
		int64_t l = lengths[i];
		if (l >= 0 && l <= top && l <= c->lmax)
			continue;
		if (l < 0)
			PyErr_Format(length_error, "model '%s' run_lengths: lengths[%lld] = %lld is "
			             "negative", m->name, (long long)i, (long long)l);
		else if (l > top)
			PyErr_Format(length_error, "model '%s' run_lengths: lengths[%lld] = %lld is past "
			             "the largest bucket, %s = %lld", m->name, (long long)i, (long long)l,
			             m->bucket_symbol, (long long)top);
		else
			PyErr_Format(length_error, "model '%s' run_lengths: lengths[%lld] = %lld is past "
			             "the inputs' %lld positions along %s", m->name, (long long)i,
			             (long long)l, (long long)c->lmax, m->bucket_symbol);
		return -1;
	}
	return 0;
}

/* model(*inputs, out=None, **inputs_by_name) on n rows, or, with lengths
 * (model.run_lengths), on n samples of their own lengths. */
static PyObject *model_call(Model *self, PyObject *const *args, Py_ssize_t npos,
                            PyObject *kwnames, PyObject *lengths_obj)
{
	const kiln_model *m = self->m;
	Call c;
	c.self = self;
	c.m = m;
	c.nin_views = c.nout_views = 0;
	c.n = c.lmax = -1;
	c.laxis = NULL;
	c.have_lengths_view = false;
	c.lengths_owned = NULL;
	for (int i = 0; i < m->noutputs; i++)
		c.out_obj[i] = NULL;
	const int64_t *lengths = NULL;
	PyObject *out = NULL;
	for (int i = 0; i < m->ninputs; i++)
		c.in_obj[i] = i < npos ? args[i] : NULL;
	if (npos > m->ninputs)
		return PyErr_Format(PyExc_TypeError, "model '%s' has %d input%s, %zd given", m->name,
		                    m->ninputs, m->ninputs == 1 ? "" : "s", npos);
	Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
	for (Py_ssize_t k = 0; k < nkw; k++) {
		PyObject *key = PyTuple_GET_ITEM(kwnames, k);
		if (is_name(key, "out")) {
			out = args[npos + k];
			continue;
		}
		int i = 0;
		while (i < m->ninputs && !is_name(key, m->inputs[i].name))
			i++;
		if (i == m->ninputs)
			return PyErr_Format(PyExc_TypeError, "model '%s' has no input '%U'", m->name, key);
		if (c.in_obj[i])
			return PyErr_Format(PyExc_TypeError, "model '%s': input '%s' given twice",
			                    m->name, m->inputs[i].name);
		c.in_obj[i] = args[npos + k];
	}
	for (int i = 0; i < m->ninputs; i++) {
		if (!c.in_obj[i])
			return PyErr_Format(PyExc_TypeError, "model '%s': missing input '%s'", m->name,
			                    m->inputs[i].name);
		if (!dtype_of(m->inputs[i].dtype))
			return PyErr_Format(PyExc_TypeError, "model '%s' input '%s': %s inputs are not "
			                    "supported from Python (packed two a byte)", m->name,
			                    m->inputs[i].name, m->inputs[i].dtype == KILN_INT4 ? "int4" : "uint4");
	}
	for (int i = 0; i < m->noutputs; i++)
		if (!dtype_of(m->outputs[i].dtype))
			return PyErr_Format(PyExc_TypeError, "model '%s' output '%s': %s outputs are not "
			                    "supported from Python (packed two a byte)", m->name,
			                    m->outputs[i].name,
			                    m->outputs[i].dtype == KILN_INT4 ? "int4" : "uint4");
	PyObject *result = NULL;
	if (lengths_obj) {
		c.laxis = m->bucket_axis;
		if (!(lengths = take_lengths(&c, lengths_obj)))
			goto done;
	}
	for (int i = 0; i < m->ninputs; i++) {
		if (get_view(c.in_obj[i], &c.in_view[i], PyBUF_RECORDS_RO, &c, &m->inputs[i],
		             "input") != 0)
			goto done;
		c.nin_views++;
		if (check_view(&c, i, &m->inputs[i], &c.in_view[i], "input") != 0)
			goto done;
	}
	if (c.n < 0)   /* nothing follows the batch: the smallest compiled size */
		c.n = m->batches[0];
	if (lengths) {
		if (c.lmax < 0)   /* no input carries the dim: the longest length */
			c.lmax = kiln_lengths_max(c.n, lengths);
		if (check_lengths(&c, lengths) != 0)
			goto done;
	}
	if (out && out != Py_None) {
		if (take_out(&c, out) != 0)
			goto done;
	} else {
		for (int i = 0; i < m->noutputs; i++)
			if (!(c.out_obj[i] = new_output(&m->outputs[i], c.n,
			                                c.laxis ? c.laxis[m->ninputs + i] : -1, c.lmax)))
				goto done;
	}
	for (int i = 0; i < m->noutputs; i++) {
		if (get_view(c.out_obj[i], &c.out_view[i], PyBUF_RECORDS, &c, &m->outputs[i], "out") != 0)
			goto done;
		c.nout_views++;
		Py_buffer *v = &c.out_view[i];
		if (out && out != Py_None) {
			if (check_view(&c, m->ninputs + i, &m->outputs[i], v, "out") != 0)
				goto done;
			for (int k = 0; k < m->ninputs + i; k++)
				if (overlaps(v, k < m->ninputs ? &c.in_view[k] : &c.out_view[k - m->ninputs])) {
					PyErr_Format(PyExc_ValueError, "model '%s' out '%s' overlaps %s '%s'",
					             m->name, m->outputs[i].name, k < m->ninputs ? "input" : "out",
					             k < m->ninputs ? m->inputs[k].name
					                            : m->outputs[k - m->ninputs].name);
					goto done;
				}
		}
	}
	kiln_context *ctx = model_context(self);
	if (!ctx)
		goto done;
	static const char zero[1];  /* empty buffers may have no address */
	kiln_input in[KILN_MAX_IO];
	kiln_output outs[KILN_MAX_IO];
	for (int i = 0; i < m->ninputs; i++)
		in[i] = (kiln_input){c.in_view[i].buf ? c.in_view[i].buf : zero, m->inputs[i].dtype,
		                     (uint64_t)c.in_view[i].len};
	for (int i = 0; i < m->noutputs; i++)
		outs[i] = (kiln_output){c.out_view[i].buf ? c.out_view[i].buf : (void *)zero,
		                        m->outputs[i].dtype, (uint64_t)c.out_view[i].len};
	int st;
	Py_BEGIN_ALLOW_THREADS
	st = lengths ? kiln_run_lengths(ctx, c.n, lengths, c.lmax, in, outs)
	             : kiln_run(ctx, c.n, in, outs);
	Py_END_ALLOW_THREADS
	if (st != KILN_OK) {
		PyErr_Format(st == KILN_LENGTH ? length_error : kiln_error, "model '%s' %s n = %lld: %s",
		             m->name, lengths ? "run_lengths at" : "at", (long long)c.n,
		             kiln_status_string(st));
		goto done;
	}
	if (m->noutputs == 1) {
		result = Py_NewRef(c.out_obj[0]);
	} else {
		result = PyTuple_New(m->noutputs);
		for (int i = 0; result && i < m->noutputs; i++)
			PyTuple_SET_ITEM(result, i, Py_NewRef(c.out_obj[i]));
	}
done:
	call_release(&c);
	return result;
}

/* model(*inputs, out=None, **inputs_by_name): run on n rows. */
static PyObject *model_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf,
                                  PyObject *kwnames)
{
	return model_call((Model *)callable, args, PyVectorcall_NARGS(nargsf), kwnames, NULL);
}

/* model.run_lengths(lengths, *inputs, out=None, **inputs_by_name): n samples
 * of their own lengths along a bucketed dim (kiln_run_lengths). */
static PyObject *model_run_lengths(PyObject *obj, PyObject *const *args, Py_ssize_t nargs,
                                   PyObject *kwnames)
{
	Model *self = (Model *)obj;
	const kiln_model *m = self->m;
	if (m->nbuckets < 2 || !m->bucket_axis || !m->buckets)
		return PyErr_Format(kiln_error, "model '%s' run_lengths: compiled without buckets "
		                    "(kiln compile --dim SYMBOL=v1,...,vk)", m->name);
	if (nargs < 1)
		return PyErr_Format(PyExc_TypeError, "model '%s' run_lengths(lengths, *inputs): "
		                    "lengths missing", m->name);
	return model_call(self, args + 1, nargs - 1, kwnames, args[0]);
}

static PyObject *model_reduce(Model *self, PyObject *unused)
{
	(void)unused;
	PyObject *kiln = PyImport_ImportModule("kiln");
	PyObject *reopen = kiln ? PyObject_GetAttrString(kiln, "_reopen") : NULL;
	Py_XDECREF(kiln);
	if (!reopen)
		return NULL;
	return Py_BuildValue("N(OOO)", reopen, self->path, self->sha256, self->entry);
}

static PyObject *model_chunks(Model *self, PyObject *arg)
{
	long long n = PyLong_AsLongLong(arg);
	if (n == -1 && PyErr_Occurred())
		return NULL;
	if (n < 0)
		return PyErr_Format(PyExc_ValueError, "chunks(n): n must be >= 0, got %lld", n);
	kiln_context *ctx = model_context(self);
	if (!ctx)
		return NULL;
	int64_t chunks[4096];
	int nchunks;
	int st = kiln_context_plan(ctx, n, chunks, 4096, &nchunks);
	if (st != KILN_OK)
		return PyErr_Format(kiln_error, "model '%s': chunks(%lld): %s", self->m->name, n,
		                    kiln_status_string(st));
	PyObject *r = PyTuple_New(nchunks);
	for (int i = 0; r && i < nchunks; i++) {
		PyObject *x = PyLong_FromLongLong(chunks[i]);
		if (!x) {
			Py_CLEAR(r);
			break;
		}
		PyTuple_SET_ITEM(r, i, x);
	}
	return r;
}

static PyObject *model_repr(Model *self)
{
	return PyUnicode_FromFormat("<kiln.Model '%s' from %U>", self->m->name, self->path);
}

static PyObject *get_name(Model *self, void *unused)
{
	(void)unused;
	return PyUnicode_FromString(self->m->name);
}

/* A tuple of n int64 values. */
static PyObject *int64_tuple(const int64_t *v, int n)
{
	PyObject *r = PyTuple_New(n);
	for (int i = 0; r && i < n; i++) {
		PyObject *x = PyLong_FromLongLong(v[i]);
		if (!x) {
			Py_CLEAR(r);
			break;
		}
		PyTuple_SET_ITEM(r, i, x);
	}
	return r;
}

static PyObject *get_batch_sizes(Model *self, void *unused)
{
	(void)unused;
	return int64_tuple(self->m->batches, self->m->nbatches);
}

static PyObject *get_batch_independent(Model *self, void *unused)
{
	(void)unused;
	return PyBool_FromLong(self->m->batch_independent);
}

static PyObject *get_batch_mixing(Model *self, void *unused)
{
	(void)unused;
	return self->m->batch_mixing ? PyUnicode_FromString(self->m->batch_mixing)
	                             : Py_NewRef(Py_None);
}

static PyObject *get_context_bytes(Model *self, void *unused)
{
	(void)unused;
	return PyLong_FromUnsignedLongLong(self->m->context_bytes);
}

static PyObject *get_arena_bytes(Model *self, void *unused)
{
	(void)unused;
	return PyLong_FromUnsignedLongLong(self->m->max_arena_bytes);
}

static PyObject *get_buckets(Model *self, void *unused)
{
	(void)unused;
	const kiln_model *m = self->m;
	return int64_tuple(m->buckets, m->nbuckets >= 2 && m->buckets ? m->nbuckets : 0);
}

static PyObject *get_bucket_symbol(Model *self, void *unused)
{
	(void)unused;
	const kiln_model *m = self->m;
	return m->nbuckets >= 2 && m->bucket_symbol ? PyUnicode_FromString(m->bucket_symbol)
	                                            : Py_NewRef(Py_None);
}

static PyGetSetDef model_getset[] = {
	{"name", (getter)get_name, NULL, "the model's NAME (kiln compile --name)", NULL},
	{"batch_sizes", (getter)get_batch_sizes, NULL, "the compiled batch sizes, ascending", NULL},
	{"batch_independent", (getter)get_batch_independent, NULL,
	 "True if any batch size runs (stitched from the compiled ones)", NULL},
	{"batch_mixing", (getter)get_batch_mixing, NULL,
	 "why only the compiled sizes run (the node that mixes rows), or None", NULL},
	{"context_bytes", (getter)get_context_bytes, NULL,
	 "bytes of one thread's context (arena, staging, plans)", NULL},
	{"arena_bytes", (getter)get_arena_bytes, NULL, "the largest compiled size's arena", NULL},
	{"buckets", (getter)get_buckets, NULL,
	 "the values of the bucketed dim (kiln compile --dim SYMBOL=v1,...,vk), or ()", NULL},
	{"bucket_symbol", (getter)get_bucket_symbol, NULL, "the bucketed dim's name, or None", NULL},
	{NULL, NULL, NULL, NULL, NULL},
};

static PyMemberDef model_members[] = {
	{"path", T_OBJECT, offsetof(Model, path), READONLY, "the shared object's path"},
	{"sha256", T_OBJECT, offsetof(Model, sha256), READONLY,
	 "the shared object's SHA-256 when it was loaded (hex)"},
	{"entry", T_OBJECT, offsetof(Model, entry), READONLY,
	 "the NAME given to load(entry=...), or None"},
	{"inputs", T_OBJECT, offsetof(Model, inputs), READONLY, "tuple of TensorInfo"},
	{"outputs", T_OBJECT, offsetof(Model, outputs), READONLY, "tuple of TensorInfo"},
	{"__weaklistoffset__", T_PYSSIZET, offsetof(Model, weakrefs), READONLY, NULL},
	{"__vectorcalloffset__", T_PYSSIZET, offsetof(Model, vectorcall), READONLY, NULL},
	{NULL, 0, 0, 0, NULL},
};

static PyMethodDef model_methods[] = {
	{"__reduce__", (PyCFunction)model_reduce, METH_NOARGS,
	 "pickle by path and hash: unpickling opens the same path and checks the hash"},
	{"chunks", (PyCFunction)model_chunks, METH_O,
	 "chunks(n): the compiled sizes a call on n rows runs, in order (the last may be padded)"},
	{"run_lengths", (PyCFunction)(void (*)(void))model_run_lengths,
	 METH_FASTCALL | METH_KEYWORDS,
	 "run_lengths(lengths, *inputs, out=None, **inputs_by_name): n samples of their own\n"
	 "lengths along the bucketed dim (kiln_run_lengths). lengths: n ints. Inputs and\n"
	 "outputs with a length_axis hold every sample at lmax positions along it (the\n"
	 "inputs' extent there; only the first lengths[i] are read, outputs are zero past\n"
	 "them); the others are as for a call. kiln.LengthError for a length below 0 or\n"
	 "past lmax or the largest bucket."},
	{NULL, NULL, 0, NULL},
};

static PyType_Slot model_slots[] = {
	{Py_tp_new, model_new},
	{Py_tp_dealloc, model_dealloc},
	{Py_tp_call, PyVectorcall_Call},
	{Py_tp_repr, model_repr},
	{Py_tp_getset, model_getset},
	{Py_tp_members, model_members},
	{Py_tp_methods, model_methods},
	{Py_tp_doc, "Model(path, entry=None, sha256=None): a compiled model's shared object.\n"
	            "Use kiln.load(path), which also records the file's hash for pickling.\n\n"
	            "model(*inputs, out=None, **inputs_by_name) runs it on n rows."},
	{0, NULL},
};

static PyType_Spec model_spec = {
	"kiln.Model", sizeof(Model), 0,
	Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL, model_slots,
};

/* ---- the module -------------------------------------------------------- */

static PyObject *module_version(PyObject *mod, PyObject *unused)
{
	(void)mod;
	(void)unused;
	return PyUnicode_FromFormat("%d.%d.%d", KILN_VERSION_MAJOR, KILN_VERSION_MINOR,
	                            KILN_VERSION_PATCH);
}

static PyObject *module_live_contexts(PyObject *mod, PyObject *unused)
{
	(void)mod;
	(void)unused;
	pthread_mutex_lock(&slots_lock);
	long n = live_slots;
	pthread_mutex_unlock(&slots_lock);
	return PyLong_FromLong(n);
}

static PyMethodDef module_methods[] = {
	{"version", module_version, METH_NOARGS, "the kiln version this module was built with"},
	{"live_contexts", module_live_contexts, METH_NOARGS,
	 "how many per-thread contexts exist (of every model and thread): a diagnostic"},
	{NULL, NULL, 0, NULL},
};

static struct PyModuleDef kiln_module = {
	PyModuleDef_HEAD_INIT, "kiln._kiln",
	"The C half of the kiln module (see kiln/__init__.py).", -1, module_methods,
	NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__kiln(void);

PyMODINIT_FUNC PyInit__kiln(void)
{
	if (pthread_key_create(&slots_key, thread_slots_free) != 0)
		return PyErr_NoMemory();
	PyObject *mod = PyModule_Create(&kiln_module);
	if (!mod)
		return NULL;
	if (PyStructSequence_InitType2(&tensor_info_type, &tensor_info_desc) != 0)
		goto fail;
	kiln_error = PyErr_NewExceptionWithDoc("kiln.Error",
	                                       "a kiln model refused a call or could not be loaded",
	                                       PyExc_RuntimeError, NULL);
	PyObject *bases = kiln_error ? PyTuple_Pack(2, kiln_error, PyExc_ValueError) : NULL;
	length_error = bases ? PyErr_NewExceptionWithDoc(
	                           "kiln.LengthError", "run_lengths: a length below 0, past the "
	                           "inputs' lmax or past the largest bucket (KILN_LENGTH)",
	                           bases, NULL)
	                     : NULL;
	Py_XDECREF(bases);
	PyObject *model_type = PyType_FromSpec(&model_spec);
	if (!kiln_error || !length_error || !model_type ||
	    PyModule_AddObjectRef(mod, "Error", kiln_error) != 0 ||
	    PyModule_AddObjectRef(mod, "LengthError", length_error) != 0 ||
	    PyModule_AddObjectRef(mod, "Model", model_type) != 0 ||
	    PyModule_AddObjectRef(mod, "TensorInfo", (PyObject *)&tensor_info_type) != 0) {
		Py_XDECREF(model_type);
		goto fail;
	}
	Py_DECREF(model_type);
	return mod;
fail:
	Py_DECREF(mod);
	return NULL;
}

/*
 * kiln.hpp - the C++ face of libkiln: header-only, C++17, over kiln/run.h.
 *
 *   #include <kiln/kiln.hpp>
 *   #include "jet_tagger.h"
 *
 *   thread_local kiln::Context ctx(jet_tagger_model);   // one per thread
 *   ctx.run(njets, {jets.data()}, {probs.data()});      // any n >= 0; throws kiln::Error
 *
 * kiln::Context owns its context memory (kiln_context_bytes of the model,
 * 64-byte aligned, freed by the destructor); it is movable, not copyable,
 * and used by one thread at a time. kiln::Scratch is one per-thread memory
 * for several models that run one after the other: it is as large as the
 * largest of their contexts and is set up again for whichever model runs.
 *
 * Buffers are passed as kiln::In / kiln::Out: a pointer to the element type
 * of the model's tensor (its size then taken from the model at n rows), or a
 * std::vector (or, in C++20, a std::span), whose size kiln_run checks. The
 * element type is checked too. Every failure throws kiln::Error, a
 * std::runtime_error that carries the kiln_status and its sentence.
 */
#ifndef KILN_KILN_HPP
#define KILN_KILN_HPP

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>
#if __cplusplus >= 202002L && __has_include(<span>)
#include <span>
#define KILN_HPP_HAVE_SPAN 1
#endif

#include "kiln/run.h"

namespace kiln {

/* A failed kiln call: status() is the enum kiln_status, what() names the
 * model and the call, then gives kiln_status_string(status()). */
class Error : public std::runtime_error {
public:
	Error(int status, const std::string &where)
		: std::runtime_error(where + ": " + kiln_status_string(static_cast<kiln_status>(status))),
		  status_(status)
	{
	}
	int status() const noexcept { return status_; }

private:
	int status_;
};

namespace detail {

template <class T> constexpr int dtype_of()
{
	using U = std::remove_cv_t<T>;
	if constexpr (std::is_same_v<U, float>)
		return KILN_FLOAT32;
	else if constexpr (std::is_same_v<U, double>)
		return KILN_FLOAT64;
	else if constexpr (std::is_same_v<U, bool>)
		return KILN_BOOL;
	else if constexpr (std::is_same_v<U, std::int8_t>)
		return KILN_INT8;
	else if constexpr (std::is_same_v<U, std::uint8_t>)
		return KILN_UINT8;
	else if constexpr (std::is_same_v<U, std::int16_t>)
		return KILN_INT16;
	else if constexpr (std::is_same_v<U, std::uint16_t>)
		return KILN_UINT16;
	else if constexpr (std::is_same_v<U, std::int32_t>)
		return KILN_INT32;
	else if constexpr (std::is_same_v<U, std::uint32_t>)
		return KILN_UINT32;
	else if constexpr (std::is_same_v<U, std::int64_t>)
		return KILN_INT64;
	else if constexpr (std::is_same_v<U, std::uint64_t>)
		return KILN_UINT64;
	else
		static_assert(sizeof(T) == 0, "kiln: no kiln_dtype for this element type; use In::raw");
}

constexpr std::uint64_t unknown_bytes = ~std::uint64_t{0};

inline std::string where(const kiln_model *m, const char *call)
{
	return std::string("kiln: ") + (m && m->name ? m->name : "?") + ": " + call;
}

inline const char *dtype_name(int dtype)
{
	switch (dtype) {
	case KILN_FLOAT32: return "float32";
	case KILN_UINT8: return "uint8";
	case KILN_INT8: return "int8";
	case KILN_UINT16: return "uint16";
	case KILN_INT16: return "int16";
	case KILN_INT32: return "int32";
	case KILN_INT64: return "int64";
	case KILN_BOOL: return "bool";
	case KILN_FLOAT16: return "float16";
	case KILN_FLOAT64: return "float64";
	case KILN_UINT32: return "uint32";
	case KILN_UINT64: return "uint64";
	case KILN_BFLOAT16: return "bfloat16";
	case KILN_FLOAT8E4M3FN: return "float8e4m3fn";
	case KILN_FLOAT8E4M3FNUZ: return "float8e4m3fnuz";
	case KILN_FLOAT8E5M2: return "float8e5m2";
	case KILN_FLOAT8E5M2FNUZ: return "float8e5m2fnuz";
	case KILN_UINT4: return "uint4";
	case KILN_INT4: return "int4";
	default: return "an unknown type";
	}
}

/* A buffer that kiln_run would refuse as bad usage, named: the tensor, its
 * element type or the bytes n rows take against what was given. */
inline void check_buffer(const kiln_model &m, std::int64_t n, const char *what,
                         const kiln_tensor_desc &t, const void *data, int dtype, std::uint64_t bytes)
{
	std::string head = where(&m, "run") + " (n = " + std::to_string(n) + "): " + what + " '" +
	                   (t.name ? t.name : "?") + "'";
	if (dtype != t.dtype)
		throw Error(KILN_USAGE, head + " is " + dtype_name(t.dtype) + ", given " + dtype_name(dtype));
	std::uint64_t need = kiln_tensor_bytes(&t, n);
	if (need != unknown_bytes && bytes < need)
		throw Error(KILN_USAGE, head + " needs " + std::to_string(need) + " bytes, given " +
		                            std::to_string(bytes));
	if (!data && need)
		throw Error(KILN_USAGE, head + ": a null buffer for " + std::to_string(need) + " bytes");
}

} // namespace detail

/* One input buffer: n rows of the tensor, dense and row-major. */
struct In {
	const void *data;
	int dtype;
	std::uint64_t bytes;   /* detail::unknown_bytes: the model's size at n rows */

	template <class T> In(const T *p) : data(p), dtype(detail::dtype_of<T>()), bytes(detail::unknown_bytes) {}
	template <class T, class A>
	In(const std::vector<T, A> &v)
		: data(v.data()), dtype(detail::dtype_of<T>()), bytes(v.size() * sizeof(T))
	{
	}
#ifdef KILN_HPP_HAVE_SPAN
	template <class T, std::size_t E>
	In(std::span<T, E> s) : data(s.data()), dtype(detail::dtype_of<T>()), bytes(s.size_bytes())
	{
	}
#endif
	/* Any element type (float16, bfloat16): enum kiln_dtype and byte size. */
	static In raw(const void *p, int dtype, std::uint64_t bytes) { return In(p, dtype, bytes); }

private:
	In(const void *p, int dt, std::uint64_t b) : data(p), dtype(dt), bytes(b) {}
};

/* One output buffer, as In. */
struct Out {
	void *data;
	int dtype;
	std::uint64_t bytes;

	template <class T> Out(T *p) : data(p), dtype(detail::dtype_of<T>()), bytes(detail::unknown_bytes)
	{
		static_assert(!std::is_const_v<T>, "kiln: an output buffer must be writable");
	}
	template <class T, class A>
	Out(std::vector<T, A> &v) : data(v.data()), dtype(detail::dtype_of<T>()), bytes(v.size() * sizeof(T))
	{
	}
#ifdef KILN_HPP_HAVE_SPAN
	template <class T, std::size_t E>
	Out(std::span<T, E> s) : data(s.data()), dtype(detail::dtype_of<T>()), bytes(s.size_bytes())
	{
		static_assert(!std::is_const_v<T>, "kiln: an output buffer must be writable");
	}
#endif
	static Out raw(void *p, int dtype, std::uint64_t bytes) { return Out(p, dtype, bytes); }

private:
	Out(void *p, int dt, std::uint64_t b) : data(p), dtype(dt), bytes(b) {}
};

namespace detail {

/* kiln_run on ctx with the model's checks of counts; throws on failure. */
inline void run(kiln_context *ctx, const kiln_model &m, std::int64_t n, std::initializer_list<In> in,
                std::initializer_list<Out> out)
{
	if (in.size() != static_cast<std::size_t>(m.ninputs) ||
	    out.size() != static_cast<std::size_t>(m.noutputs) || n < 0)
		throw Error(KILN_USAGE, where(&m, "run") + " (" + std::to_string(in.size()) + " inputs and " +
		                            std::to_string(out.size()) + " outputs for a model of " +
		                            std::to_string(m.ninputs) + " and " +
		                            std::to_string(m.noutputs) + ", n = " + std::to_string(n) + ")");
	kiln_input ins[KILN_MAX_IO];
	kiln_output outs[KILN_MAX_IO];
	int i = 0;
	for (const In &x : in) {
		ins[i] = {x.data, x.dtype,
		          x.bytes == unknown_bytes ? kiln_tensor_bytes(&m.inputs[i], n) : x.bytes};
		check_buffer(m, n, "input", m.inputs[i], ins[i].data, ins[i].dtype, ins[i].bytes);
		i++;
	}
	i = 0;
	for (const Out &y : out) {
		outs[i] = {y.data, y.dtype,
		           y.bytes == unknown_bytes ? kiln_tensor_bytes(&m.outputs[i], n) : y.bytes};
		check_buffer(m, n, "output", m.outputs[i], outs[i].data, outs[i].dtype, outs[i].bytes);
		i++;
	}
	int st = kiln_run(ctx, n, ins, outs);
	if (st != KILN_OK)
		throw Error(st, where(&m, "run") + " (n = " + std::to_string(n) + ")");
}

/* kiln_run_lengths on ctx (a bucketed model); throws on failure. A buffer
 * given as a bare pointer is trusted to hold what lmax needs. */
inline void run_lengths(kiln_context *ctx, const kiln_model &m, std::int64_t n,
                        const std::int64_t *lengths, std::int64_t lmax,
                        std::initializer_list<In> in, std::initializer_list<Out> out)
{
	if (in.size() != static_cast<std::size_t>(m.ninputs) ||
	    out.size() != static_cast<std::size_t>(m.noutputs) || n < 0)
		throw Error(KILN_USAGE, where(&m, "run_lengths") + " (" + std::to_string(in.size()) +
		                            " inputs and " + std::to_string(out.size()) +
		                            " outputs for a model of " + std::to_string(m.ninputs) +
		                            " and " + std::to_string(m.noutputs) + ")");
	kiln_input ins[KILN_MAX_IO];
	kiln_output outs[KILN_MAX_IO];
	int i = 0;
	for (const In &x : in)
		ins[i++] = {x.data, x.dtype, x.bytes};   /* unknown_bytes: any size */
	i = 0;
	for (const Out &y : out)
		outs[i++] = {y.data, y.dtype, y.bytes};
	int st = kiln_run_lengths(ctx, n, lengths, lmax, ins, outs);
	if (st != KILN_OK)
		throw Error(st, where(&m, "run_lengths") + " (n = " + std::to_string(n) + ")");
}

/* Memory from the aligned operator new, 64-byte aligned. */
struct Memory {
	void *p = nullptr;
	std::uint64_t bytes = 0;

	Memory() = default;
	explicit Memory(std::uint64_t b) : p(::operator new(static_cast<std::size_t>(b), std::align_val_t{64})), bytes(b) {}
	Memory(Memory &&o) noexcept : p(std::exchange(o.p, nullptr)), bytes(std::exchange(o.bytes, 0)) {}
	Memory &operator=(Memory &&o) noexcept
	{
		std::swap(p, o.p);
		std::swap(bytes, o.bytes);
		return *this;
	}
	Memory(const Memory &) = delete;
	Memory &operator=(const Memory &) = delete;
	~Memory()
	{
		if (p)
			::operator delete(p, std::align_val_t{64});
	}
};

} // namespace detail

/* A context for one model, in memory it owns. */
class Context {
public:
	explicit Context(const kiln_model &m) : mem_(bytes_of(m))
	{
		int st = kiln_context_init(&ctx_, &m, mem_.p, mem_.bytes);
		if (st != KILN_OK)
			throw Error(st, detail::where(&m, "kiln_context_init"));
	}
	Context(Context &&o) noexcept : mem_(std::move(o.mem_)), ctx_(std::exchange(o.ctx_, nullptr)) {}
	Context &operator=(Context &&o) noexcept
	{
		mem_ = std::move(o.mem_);
		std::swap(ctx_, o.ctx_);
		return *this;
	}
	Context(const Context &) = delete;
	Context &operator=(const Context &) = delete;

	/* Any n >= 0: inputs and outputs in the descriptor's order. */
	void run(std::int64_t n, std::initializer_list<In> in, std::initializer_list<Out> out)
	{
		detail::run(ctx_, model(), n, in, out);
	}
	/* n samples of their own lengths along a bucketed dim (kiln compile
	 * --dim SYMBOL=v1,...,vk): tensors that carry it at lmax (< 0: the
	 * longest length), see kiln_run_lengths. */
	void run_lengths(std::int64_t n, const std::int64_t *lengths, std::int64_t lmax,
	                 std::initializer_list<In> in, std::initializer_list<Out> out)
	{
		detail::run_lengths(ctx_, model(), n, lengths, lmax, in, out);
	}
	/* A batch rule "B:s1,...,sk" (kiln/run.h). */
	void set_rule(const char *rule)
	{
		int st = kiln_context_set_rule(ctx_, rule);
		if (st != KILN_OK)
			throw Error(st, detail::where(&model(), "set_rule"));
	}
	const kiln_model &model() const noexcept { return *kiln_context_model(ctx_); }
	/* For the typed C entry: NAME_run(ctx.get(), n, ...). */
	kiln_context *get() noexcept { return ctx_; }
	std::uint64_t bytes() const noexcept { return mem_.bytes; }

private:
	static std::uint64_t bytes_of(const kiln_model &m)
	{
		std::uint64_t b = kiln_context_bytes(&m);
		if (!b)
			throw Error(KILN_USAGE, detail::where(&m, "kiln_context_bytes"));
		return b;
	}
	detail::Memory mem_;
	kiln_context *ctx_ = nullptr;
};

/* One memory for several models run one at a time (one per thread): the
 * largest of their context bytes, not their sum. use(m) sets it up for m
 * when another model used it last (rules and costs set since are lost). */
class Scratch {
public:
	explicit Scratch(std::initializer_list<const kiln_model *> models)
		: mem_(bytes_of(models.begin(), static_cast<int>(models.size())))
	{
	}
	static std::uint64_t bytes_of(const kiln_model *const *models, int n)
	{
		std::uint64_t b = kiln_context_bytes_max(models, n);
		if (!b)
			throw Error(KILN_USAGE, "kiln: Scratch: no models, or a NULL one");
		return b;
	}
	kiln_context *use(const kiln_model &m)
	{
		if (!ctx_ || kiln_context_model(ctx_) != &m) {
			ctx_ = nullptr;
			int st = kiln_context_init(&ctx_, &m, mem_.p, mem_.bytes);
			if (st != KILN_OK)
				throw Error(st, detail::where(&m, "Scratch::use (a model it was not sized for?)"));
		}
		return ctx_;
	}
	void run(const kiln_model &m, std::int64_t n, std::initializer_list<In> in,
	         std::initializer_list<Out> out)
	{
		detail::run(use(m), m, n, in, out);
	}
	std::uint64_t bytes() const noexcept { return mem_.bytes; }

private:
	detail::Memory mem_;
	kiln_context *ctx_ = nullptr;
};

} // namespace kiln

#endif

/*
 * cxx.cpp - kiln/kiln.hpp: kiln::Context and kiln::Scratch against the C
 * entry points, and every failure thrown as kiln::Error with its status.
 * Batched rows are checked against batch-1 calls within 1e-5 relative +
 * 1e-6 absolute. Links `data` (the jet tagger, 16 -> 5), `other` (the mlp, 4 -> 3)
 * and `lens` (tests/fixtures/lengths.onnx with buckets P = 4, 8, 16: the
 * masked sum of x over P and 2 x per particle), whose run_lengths is checked
 * against the C kiln_run_lengths byte for byte and against the sums;
 * built with g++ and clang++ at -std=c++17 (and c++20 for std::span) with
 * -Wall -Wextra -pedantic -Werror by plugins.sh.
 */
#include <kiln/kiln.hpp>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "data.h"
#include "lens.h"
#include "other.h"

static_assert(DATA_IN0_ELEMS == 16 && DATA_OUT0_ELEMS == 5, "the tagger: 16 features, 5 classes");

static int fails;
#define CHECK(cond)                                                     \
	do {                                                                \
		if (!(cond)) {                                                  \
			std::printf("FAIL line %d: %s\n", __LINE__, #cond);         \
			fails++;                                                    \
		}                                                               \
	} while (0)

/* Batched and batch-1 GEMMs may add in another order: 1e-5 relative + 1e-6 absolute. */
static bool close(float got, float want)
{
	return std::fabs(got - want) <= 1e-6f + 1e-5f * std::fabs(want);
}

template <class F> static int status_of(F f)
{
	try {
		f();
	} catch (const kiln::Error &e) {
		return e.status();
	}
	return KILN_OK;
}

/* Context::run_lengths on the bucketed `lens`: 7 samples laid out at 18
 * positions with NaN past each length (never read), against the C call's
 * bytes and the sums themselves; KILN_LENGTH and KILN_USAGE as kiln::Error. */
static void run_lengths_checks()
{
	static_assert(LENS_NUM_BUCKETS == 3 && LENS_IN0_BUCKET_AXIS == 2 && LENS_OUT0_BUCKET_AXIS == -1 &&
	              LENS_OUT1_BUCKET_AXIS == 2, "lengths.onnx with buckets on P (axis 2)");
	const std::int64_t n = 7, lmax = 18;
	std::int64_t lengths[n] = {3, 16, 0, 9, 4, 1, 12};
	const std::size_t nx = static_cast<std::size_t>(n * 3 * lmax), nm = static_cast<std::size_t>(n * lmax);
	std::vector<float> x(nx), mask(nm), sum(static_cast<std::size_t>(n * 3)), per(nx, 5.0f);
	for (std::int64_t i = 0; i < n; i++)
		for (std::int64_t p = 0; p < lmax; p++) {
			bool real = p < lengths[i];
			mask[static_cast<std::size_t>(i * lmax + p)] = real ? 1.0f : NAN;
			for (std::int64_t c = 0; c < 3; c++)
				x[static_cast<std::size_t>((i * 3 + c) * lmax + p)] =
				    real ? static_cast<float>(std::sin(0.3 * static_cast<double>(i * 50 + c * 20 + p)))
				         : NAN;
		}
	kiln::Context ctx(lens_model);
	ctx.run_lengths(n, lengths, lmax, {x, mask}, {sum, per});
	/* the C call on its own context */
	std::vector<float> csum(sum.size()), cper(per.size(), 6.0f);
	kiln_context *c = nullptr;
	CHECK(kiln_context_create(&c, &lens_model) == KILN_OK);
	const kiln_input in[2] = {{x.data(), KILN_FLOAT32, nx * sizeof(float)},
	                          {mask.data(), KILN_FLOAT32, nm * sizeof(float)}};
	const kiln_output out[2] = {{csum.data(), KILN_FLOAT32, csum.size() * sizeof(float)},
	                            {cper.data(), KILN_FLOAT32, cper.size() * sizeof(float)}};
	CHECK(kiln_run_lengths(c, n, lengths, lmax, in, out) == KILN_OK);
	kiln_context_destroy(c);
	CHECK(std::memcmp(sum.data(), csum.data(), sum.size() * sizeof(float)) == 0);
	CHECK(std::memcmp(per.data(), cper.data(), per.size() * sizeof(float)) == 0);
	/* the values: the sums of the first lengths[i] positions, 2 x there and 0 past them */
	for (std::int64_t i = 0; i < n; i++)
		for (std::int64_t c3 = 0; c3 < 3; c3++) {
			double want = 0;
			for (std::int64_t p = 0; p < lmax; p++) {
				std::size_t at = static_cast<std::size_t>((i * 3 + c3) * lmax + p);
				float w = p < lengths[i] ? 2.0f * x[at] : 0.0f;
				CHECK(per[at] == w);
				if (p < lengths[i])
					want += static_cast<double>(x[at]);
			}
			CHECK(close(sum[static_cast<std::size_t>(i * 3 + c3)], static_cast<float>(want)));
		}
	/* bare pointers (their sizes trusted): the same bytes */
	std::vector<float> psum(sum.size()), pper(per.size(), 4.0f);
	ctx.run_lengths(n, lengths, lmax, {x.data(), mask.data()}, {psum.data(), pper.data()});
	CHECK(std::memcmp(sum.data(), psum.data(), sum.size() * sizeof(float)) == 0);
	CHECK(std::memcmp(per.data(), pper.data(), per.size() * sizeof(float)) == 0);
	/* a length past the largest bucket, past lmax, below 0: KILN_LENGTH, nothing run */
	for (std::int64_t bad : {std::int64_t{17}, lmax + 1, std::int64_t{-1}}) {
		lengths[3] = bad;
		CHECK(status_of([&] { ctx.run_lengths(n, lengths, lmax, {x, mask}, {sum, per}); }) == KILN_LENGTH);
	}
	lengths[3] = 9;
	try {
		lengths[0] = 17;
		ctx.run_lengths(n, lengths, lmax, {x, mask}, {sum, per});
		CHECK(!"a length past the largest bucket was taken");
	} catch (const kiln::Error &e) {
		CHECK(e.status() == KILN_LENGTH);
		CHECK(std::strcmp(e.what(), "kiln: lens: run_lengths (n = 7): a sample's length is negative, "
		                            "longer than the largest compiled bucket or than the call's "
		                            "padded length") == 0);
	}
	lengths[0] = 3;
	/* vectors carry their size: a per-particle output too small for lmax is refused */
	std::vector<float> short_per(nx - 1);
	CHECK(status_of([&] { ctx.run_lengths(n, lengths, lmax, {x, mask}, {sum, short_per}); }) == KILN_USAGE);
	/* counts, and a model compiled without buckets */
	CHECK(status_of([&] { ctx.run_lengths(n, lengths, lmax, {x}, {sum, per}); }) == KILN_USAGE);
	kiln::Context plain(data_model);
	std::vector<float> jets(DATA_IN0_ELEMS), probs(DATA_OUT0_ELEMS);
	CHECK(status_of([&] { plain.run_lengths(1, lengths, -1, {jets}, {probs}); }) == KILN_USAGE);
	CHECK(status_of([&] { ctx.run_lengths(n, lengths, lmax, {x, mask}, {sum, per}); }) == KILN_OK);
	CHECK(std::memcmp(sum.data(), csum.data(), sum.size() * sizeof(float)) == 0);
}

int main()
{
	const int maxn = 37;
	std::vector<float> jets(maxn * DATA_IN0_ELEMS), probs(maxn * DATA_OUT0_ELEMS), one(DATA_OUT0_ELEMS);
	std::vector<float> xs(maxn * OTHER_IN0_ELEMS), ys(maxn * OTHER_OUT0_ELEMS), ys1(OTHER_OUT0_ELEMS);
	for (std::size_t i = 0; i < jets.size(); i++)
		jets[i] = static_cast<float>(std::sin(0.05 * static_cast<double>(i)));
	for (std::size_t i = 0; i < xs.size(); i++)
		xs[i] = static_cast<float>(std::cos(0.2 * static_cast<double>(i)));

	kiln::Context ctx(data_model);
	CHECK(&ctx.model() == &data_model);
	std::vector<unsigned char> arena(DATA_ARENA_BYTES + 64);
	void *a64 = reinterpret_cast<void *>((reinterpret_cast<std::uintptr_t>(arena.data()) + 63) / 64 * 64);
	for (int n = 0; n <= maxn; n++) {
		ctx.run(n, {jets.data()}, {probs.data()});
		/* each row against a batch-1 call of the C entry point */
		for (int r = 0; r < n; r++) {
			CHECK(data_run_b1(a64, &jets[static_cast<std::size_t>(r) * DATA_IN0_ELEMS], one.data()) == 0);
			for (int k = 0; k < DATA_OUT0_ELEMS; k++)
				CHECK(close(probs[static_cast<std::size_t>(r) * DATA_OUT0_ELEMS + static_cast<std::size_t>(k)],
				            one[static_cast<std::size_t>(k)]));
		}
	}
	/* vectors carry their size: too small is refused */
	std::vector<float> small(3 * DATA_OUT0_ELEMS);
	CHECK(status_of([&] { ctx.run(4, {jets}, {small}); }) == KILN_USAGE);
	CHECK(status_of([&] { ctx.run(3, {jets}, {small}); }) == KILN_OK);
	/* element type, counts */
	std::vector<double> wrong(maxn * DATA_IN0_ELEMS);
	CHECK(status_of([&] { ctx.run(2, {wrong.data()}, {probs.data()}); }) == KILN_USAGE);
	CHECK(status_of([&] { ctx.run(2, {jets.data(), jets.data()}, {probs.data()}); }) == KILN_USAGE);
	CHECK(status_of([&] { ctx.run(-1, {jets.data()}, {probs.data()}); }) == KILN_USAGE);
	/* what() names the tensor, the expected and the given type or bytes */
	try {
		ctx.run(2, {wrong.data()}, {probs.data()});
		CHECK(!"a float64 input was taken");
	} catch (const std::runtime_error &e) {
		CHECK(std::strcmp(e.what(), "kiln: data: run (n = 2): input 'jets' is float32, given "
		                            "float64: bad usage") == 0);
	}
	try {
		ctx.run(4, {jets}, {small});
		CHECK(!"a small output was taken");
	} catch (const std::runtime_error &e) {
		CHECK(std::strcmp(e.what(), "kiln: data: run (n = 4): output 'probs' needs 80 bytes, "
		                            "given 60: bad usage") == 0);
	}
	std::vector<std::int32_t> ints(5);
	try {
		ctx.run(1, {jets}, {ints});
		CHECK(!"an int32 output was taken");
	} catch (const std::runtime_error &e) {
		CHECK(std::strcmp(e.what(), "kiln: data: run (n = 1): output 'probs' is float32, given "
		                            "int32: bad usage") == 0);
	}
	/* a context is its model's: the typed C entry refuses another one */
	kiln::Context octx(other_model);
	CHECK(data_run(octx.get(), 1, jets.data(), probs.data()) == KILN_WRONG_MODEL);
	/* moves keep the context usable */
	kiln::Context moved(std::move(octx));
	moved.run(5, {xs.data()}, {ys.data()});
	CHECK(&moved.model() == &other_model);

	/* one scratch, two models, alternating */
	kiln::Scratch scratch({&data_model, &other_model});
	CHECK(scratch.bytes() == (DATA_CONTEXT_BYTES > OTHER_CONTEXT_BYTES ? DATA_CONTEXT_BYTES
	                                                                    : OTHER_CONTEXT_BYTES));
	kiln::Context ref_other(other_model);
	std::vector<float> probs2(probs.size()), ys2(ys.size());
	for (int n = 0; n <= maxn; n += 6) {
		scratch.run(data_model, n, {jets.data()}, {probs2.data()});
		scratch.run(other_model, n, {xs.data()}, {ys2.data()});
		ctx.run(n, {jets.data()}, {probs.data()});
		ref_other.run(n, {xs.data()}, {ys.data()});
		CHECK(std::memcmp(probs.data(), probs2.data(), sizeof(float) * DATA_OUT0_ELEMS * static_cast<std::size_t>(n)) == 0);
		CHECK(std::memcmp(ys.data(), ys2.data(), sizeof(float) * OTHER_OUT0_ELEMS * static_cast<std::size_t>(n)) == 0);
		CHECK(other_run(scratch.use(other_model), n, xs.data(), ys2.data()) == KILN_OK);
	}
#if __cplusplus >= 202002L
	std::span<const float> sj(jets);
	std::span<float> sp(probs);
	ctx.run(7, {sj}, {sp});
	CHECK(status_of([&] { ctx.run(maxn + 1, {sj}, {sp}); }) == KILN_USAGE);
#endif
	run_lengths_checks();
	std::printf("c++%ld: %s\n", static_cast<long>(__cplusplus / 100 % 100), fails ? "FAILED" : "ok");
	return fails != 0;
}

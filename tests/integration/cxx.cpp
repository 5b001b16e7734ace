/*
 * cxx.cpp - kiln/kiln.hpp: kiln::Context and kiln::Scratch against the C
 * entry points, and every failure thrown as kiln::Error with its status.
 * Batched rows are checked against batch-1 calls within 1e-5 relative +
 * 1e-6 absolute. Links `data` (the jet tagger, 16 -> 5) and `other` (the mlp, 4 -> 3);
 * built with g++ and clang++ at -std=c++17 (and c++20 for std::span) with
 * -Wall -Wextra -pedantic -Werror by plugins.sh.
 */
#include <kiln/kiln.hpp>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "data.h"
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
	std::printf("c++%ld: %s\n", static_cast<long>(__cplusplus / 100 % 100), fails ? "FAILED" : "ok");
	return fails != 0;
}

/*
 * main.c - call a kiln-compiled model from C: the jet tagger compiled with
 *
 *     kiln compile examples/jet_tagger/model.onnx --batch 1,8 --name jet_tagger -o OUT
 *
 * and linked as  cc -I OUT -I include main.c OUT/jet_tagger.o libkiln.a -lm.
 * An event loop: each event has a different number of jets (16 features
 * each), and jet_tagger_run gives 5 class probabilities per jet for any
 * count, from the two compiled batch sizes (kiln stitches and pads). The
 * context is the only memory the model uses; give each thread its own.
 */
#include <stdalign.h>
#include <stdio.h>

#include "jet_tagger.h"

/* Features and classes per jet from the generated header: 16 and 5. */
enum { MAXJETS = 16, NFEAT = JET_TAGGER_IN0_ELEMS, NCLASS = JET_TAGGER_OUT0_ELEMS };

int main(void)
{
	/* One context per thread: thread-local, never a static that threads share. */
	static _Thread_local alignas(64) unsigned char memory[JET_TAGGER_CONTEXT_BYTES];
	kiln_context *ctx;
	int status = kiln_context_init(&ctx, &jet_tagger_model, memory, sizeof memory);
	if (status != KILN_OK) {
		fprintf(stderr, "jet_tagger: %s\n", kiln_status_string(status));
		return 1;
	}
	printf("model %s, compiled batch sizes:", jet_tagger_model.name);
	for (int i = 0; i < jet_tagger_model.nbatches; i++)
		printf(" %lld", (long long)jet_tagger_model.batches[i]);
	printf("; context %llu bytes\n", (unsigned long long)JET_TAGGER_CONTEXT_BYTES);

	static const int njets_per_event[] = {0, 3, 8, 11};
	float jets[MAXJETS][NFEAT], probs[MAXJETS][NCLASS];
	for (int e = 0; e < 4; e++) {
		int njets = njets_per_event[e];
		for (int j = 0; j < njets; j++)
			for (int f = 0; f < NFEAT; f++)
				jets[j][f] = (float)((j + 1) * (f % 5) - 7) / 10.0f;
		int64_t chunks[8];
		int nchunks = 0;
		kiln_context_plan(ctx, njets, chunks, 8, &nchunks);
		status = jet_tagger_run(ctx, njets, &jets[0][0], &probs[0][0]);
		if (status != KILN_OK) {
			fprintf(stderr, "jet_tagger: %s\n", kiln_status_string(status));
			return 1;
		}
		printf("event %d: %d jets, run as", e, njets);
		for (int c = 0; c < nchunks; c++)
			printf("%s%lld", c ? " + " : " ", (long long)chunks[c]);
		printf("%s\n", nchunks ? "" : " nothing");
		for (int j = 0; j < njets; j++) {
			printf("  jet %d:", j);
			for (int c = 0; c < NCLASS; c++)
				printf(" %.4f", probs[j][c]);
			printf("\n");
		}
	}
	return 0;
}

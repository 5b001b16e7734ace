/*
 * main.c - call a kiln-compiled model from C: the jet tagger compiled with
 *
 *     kiln compile examples/jet_tagger/model.onnx --batch 1,8 --name jet_tagger -o OUT
 *
 * and linked as  cc -I OUT -I include main.c OUT/jet_tagger.o libkiln.a -lm.
 * It tags one event of 8 jets (16 features each) and prints the 5 class
 * probabilities per jet. The arena is the only memory the model uses; give
 * each thread its own.
 */
#include <stdalign.h>
#include <stdio.h>

#include "jet_tagger.h"

int main(void)
{
	enum { NJETS = 8, NFEAT = 16, NCLASS = 5 };
	static alignas(64) unsigned char arena[JET_TAGGER_ARENA_BYTES];
	float jets[NJETS][NFEAT], probs[NJETS][NCLASS];
	for (int j = 0; j < NJETS; j++)
		for (int f = 0; f < NFEAT; f++)
			jets[j][f] = (float)((j + 1) * (f % 5) - 7) / 10.0f;

	int status = jet_tagger_run_b8(arena, &jets[0][0], &probs[0][0]);
	if (status != 0) {
		fprintf(stderr, "jet_tagger: %s\n", kiln_status_string(status));
		return 1;
	}
	printf("model %s, compiled batch sizes:", jet_tagger_model.name);
	for (int i = 0; i < jet_tagger_model.nbatches; i++)
		printf(" %lld", (long long)jet_tagger_model.batches[i]);
	printf("\n");
	for (int j = 0; j < NJETS; j++) {
		printf("jet %d:", j);
		for (int c = 0; c < NCLASS; c++)
			printf(" %.4f", probs[j][c]);
		printf("\n");
	}
	return 0;
}

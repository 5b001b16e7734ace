/*
 * ref.c - the reference for host.c: one model called `data`, linked alone
 * into a program (through plugin.c's code), printed as host.c prints a
 * plugin (argv[1] is its label).
 */
#define REF
#include "host.c"

#define PLUGIN ref
#include "plugin.c"

int main(int argc, char **argv)
{
	return argc == 2 ? print_outputs(argv[1], ref_eval, DATA_IN0_ELEMS, DATA_OUT0_ELEMS) : 2;
}

"""The --every N option of the testdata scripts: which share of the sorted
case list a run checks (the sanitizer build checks every 3rd case; its
conformance suite compiles and runs every case under ASan anyway)."""


def every(args):
    """N of --every N in args (1 without it)."""
    if "--every" not in args:
        return 1
    k = args.index("--every")
    if k + 1 >= len(args) or not args[k + 1].isdigit() or int(args[k + 1]) < 1:
        raise SystemExit("--every takes a positive count")
    return int(args[k + 1])

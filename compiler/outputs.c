/*
 * outputs.c - how `kiln compile` writes its files: never through a link,
 * all or nothing, and one consistent set when compiles race.
 *
 * Every output of one compile is written into a staging folder
 * DIR/.NAME.kiln-XXXXXX that mkdtemp creates (mode 0700, a name nobody
 * else has): the files kiln writes itself are opened there with
 * O_CREAT|O_EXCL|O_NOFOLLOW (mode 0666 less the umask), and the C compiler
 * and `ld -r` write there too, so NAME.c's #include "NAME.h" finds the new
 * header beside it. A depfile, which may be anywhere, gets a temporary
 * .BASE.kiln-XXXXXX beside its own name (a rename stays in one file system).
 *
 * Only when the whole compile succeeded are the files renamed to their
 * names, NAME.o (or NAME.so) last: rename(2) replaces a link found at the
 * final name, never the link's target. The renames hold an exclusive flock
 * on DIR/.NAME.lock (opened O_NOFOLLOW, created empty and left in place), so
 * two compiles of one NAME into one folder cannot interleave their renames:
 * the set left is all one compile's. The compiles themselves run in
 * parallel; only the renames, a few system calls, wait for each other.
 *
 * On a failure diag_fail long-jumps and model_close calls outputs_abort,
 * which removes the staging folder and the depfile's temporary: the
 * previous outputs stay as they were. A process that dies (SIGKILL, SIGINT,
 * SIGTERM, abort) cannot clean up after itself, so outputs_begin forks a
 * small cleaner that ignores SIGINT, SIGTERM and SIGHUP and reads a pipe:
 * kiln sends it the temporaries and the process group of a running C
 * compiler or linker; when the pipe closes without a commit record (kiln
 * is gone), the cleaner kills that process group, removes the temporaries
 * and exits. Only a SIGKILL of the cleaner too (of the whole process
 * group), or a SIGKILL between mkdtemp and the write that names the new
 * folder to the cleaner (two system calls), leaves a hidden
 * .NAME.kiln-XXXXXX folder behind; a kill during the renames themselves can
 * leave a mix of old and new files.
 *
 * The output folder DIR itself is the user's: a DIR that is a symbolic link
 * to a folder is followed, like any path the user names; nothing kiln
 * creates inside it is ever reached through a link.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "compile.h"
#include "load.h"

enum { MAX_OUT = 16 };

typedef struct OutFile {
	const char *tmp, *final;
	bool keep;        /* renamed to final on commit; else removed (NAME_code.o) */
	bool last;        /* NAME.o, NAME.so: renamed after the others */
} OutFile;

struct Outputs {
	const char *dir, *name;
	const char *stage;        /* the staging folder */
	OutFile files[MAX_OUT];
	int nfiles;
	int pipe_fd;              /* to the cleaner; -1 without one */
	pid_t cleaner;
};

/* ---- the cleaner ------------------------------------------------------ */

/* Records on the pipe: a letter, a NUL-terminated argument. */
enum { REC_DIR = 'D', REC_FILE = 'F', REC_GROUP = 'P', REC_GROUP_DONE = 'Q', REC_COMMIT = 'C' };

/* Remove a staging folder and what is in it (files only: it holds no
 * folders). Safe in the cleaner: no locks are held after fork. */
static void remove_stage(const char *stage)
{
	DIR *d = opendir(stage);
	if (d) {
		struct dirent *e;
		while ((e = readdir(d)))
			if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
				unlinkat(dirfd(d), e->d_name, 0);
		closedir(d);
	}
	rmdir(stage);
}

static _Noreturn void cleaner_main(int rfd)
{
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap);
	for (;;) {
		if (!buf)
			_exit(1);
		if (len == cap) {
			char *more = realloc(buf, cap * 2);
			if (!more)
				_exit(1);
			buf = more;
			cap *= 2;
		}
		ssize_t got = read(rfd, buf + len, cap - len);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		len += (size_t)got;
	}
	bool committed = false;
	long group = 0;
	for (size_t i = 0; i < len;) {
		char kind = buf[i];
		const char *arg = buf + i + 1;
		size_t alen = strnlen(arg, len - i - 1);
		if (i + 1 + alen >= len)
			break;  /* a torn record: kiln died while writing it */
		if (kind == REC_COMMIT)
			committed = true;
		else if (kind == REC_GROUP)
			group = strtol(arg, NULL, 10);
		else if (kind == REC_GROUP_DONE)
			group = 0;
		i += alen + 2;
	}
	if (!committed) {
		if (group > 0) {
			/* The C compiler or linker kiln was waiting for: stop it before
			 * removing what it writes, and wait until its group is gone. */
			kill(-(pid_t)group, SIGKILL);
			for (int t = 0; t < 400 && kill(-(pid_t)group, 0) == 0; t++)
				nanosleep(&(struct timespec){0, 5000000}, NULL);
		}
		for (size_t i = 0; i < len;) {
			char kind = buf[i];
			const char *arg = buf + i + 1;
			size_t alen = strnlen(arg, len - i - 1);
			if (i + 1 + alen >= len)
				break;
			if (kind == REC_FILE)
				unlink(arg);
			else if (kind == REC_DIR)
				remove_stage(arg);
			i += alen + 2;
		}
	}
	_exit(0);
}

static void tell(Outputs *o, char kind, const char *arg)
{
	if (o->pipe_fd < 0)
		return;
	size_t n = strlen(arg);
	char rec[4096];
	if (n + 2 > sizeof rec) {
		/* (a path this long cannot be cleaned up by the cleaner: kiln's own
		 * error path still removes it) */
		return;
	}
	rec[0] = kind;
	memcpy(rec + 1, arg, n + 1);
	const char *p = rec;
	size_t left = n + 2;
	while (left) {
		ssize_t put = write(o->pipe_fd, p, left);
		if (put < 0 && errno == EINTR)
			continue;
		if (put <= 0) {
			close(o->pipe_fd);  /* the cleaner is gone: go on without it */
			o->pipe_fd = -1;
			return;
		}
		p += put;
		left -= (size_t)put;
	}
}

static void start_cleaner(Outputs *o)
{
	int fds[2];
	o->pipe_fd = -1;
	o->cleaner = -1;
	if (pipe(fds) != 0)
		return;
	/* close-on-exec: the tools kiln runs must not hold the pipe open */
	fcntl(fds[0], F_SETFD, FD_CLOEXEC);
	fcntl(fds[1], F_SETFD, FD_CLOEXEC);
	fflush(NULL);  /* the child must not write kiln's buffered output again */
	pid_t pid = fork();
	if (pid == 0) {
		close(fds[1]);
		cleaner_main(fds[0]);
	}
	close(fds[0]);
	if (pid < 0) {
		close(fds[1]);
		return;
	}
	o->cleaner = pid;
	o->pipe_fd = fds[1];
}

static void stop_cleaner(Outputs *o)
{
	if (o->pipe_fd >= 0)
		close(o->pipe_fd);
	o->pipe_fd = -1;
	if (o->cleaner > 0)
		while (waitpid(o->cleaner, NULL, 0) < 0 && errno == EINTR)
			;
	o->cleaner = -1;
}

/* ---- staging ---------------------------------------------------------- */

void outputs_begin(Model *m, const char *dir, const char *name)
{
	KILN_ASSERT(!m->outputs);
	Outputs *o = arena_alloc(m->arena, sizeof *o);
	memset(o, 0, sizeof *o);
	o->dir = dir;
	o->name = name;
	o->pipe_fd = -1;
	/* The cleaner first, then the folder, then its name on the pipe: a kill
	 * between mkdtemp and tell leaves the folder behind, and that window is
	 * two system calls. (With the fork in between, it was the fork: a kill
	 * 56 ms into a sanitizer build's compile on a loaded machine landed
	 * there and left .net.kiln-XXXXXX.) */
	start_cleaner(o);
	char *stage = arena_printf(m->arena, "%s/.%s.kiln-XXXXXX", dir, name);
	if (!mkdtemp(stage)) {
		int e = errno;
		stop_cleaner(o);
		diag_fail(m->diag, KILN_IO, "cannot create a folder in %s: %s", dir, strerror(e));
	}
	tell(o, REC_DIR, stage);
	o->stage = stage;
	m->outputs = o;
}

static OutFile *add_file(Model *m, const char *tmp, const char *final, bool keep, bool last)
{
	Outputs *o = m->outputs;
	KILN_ASSERT(o && o->nfiles < MAX_OUT);
	OutFile *f = &o->files[o->nfiles++];
	*f = (OutFile){tmp, final, keep, last};
	return f;
}

const char *outputs_stage_path(Model *m, const char *base, bool keep, bool last)
{
	Outputs *o = m->outputs;
	const char *tmp = arena_printf(m->arena, "%s/%s", o->stage, base);
	add_file(m, tmp, arena_printf(m->arena, "%s/%s", o->dir, base), keep, last);
	return tmp;
}

static FILE *open_new(Model *m, const char *tmp, const char *shown)
{
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
	FILE *f = fd < 0 ? NULL : fdopen(fd, "w");
	if (!f) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		diag_fail(m->diag, KILN_IO, "cannot create %s: %s", shown, strerror(e));
	}
	model_track_file(m, f);
	return f;
}

FILE *outputs_open(Model *m, const char *base, const char **final, const char **tmp)
{
	const char *t = outputs_stage_path(m, base, true, false);
	if (tmp)
		*tmp = t;
	*final = m->outputs->files[m->outputs->nfiles - 1].final;
	return open_new(m, t, *final);
}

FILE *outputs_open_beside(Model *m, const char *final)
{
	const char *slash = strrchr(final, '/');
	const char *dir = slash ? arena_printf(m->arena, "%.*s", (int)(slash - final + 1), final) : "";
	const char *base = slash ? slash + 1 : final;
	if (!*base)
		diag_fail(m->diag, KILN_USAGE, "%s names a folder, not a file", final);
	struct stat st;
	if (lstat(final, &st) == 0 && S_ISDIR(st.st_mode))
		diag_fail(m->diag, KILN_IO, "%s is a folder", final);
	static const char letters[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	uint64_t r = (uint64_t)now.tv_nsec * 2654435761u ^ (uint64_t)getpid() << 32;
	for (int attempt = 0; attempt < 100; attempt++) {
		char suffix[7];
		r = r * 6364136223846793005u + 1442695040888963407u;
		for (int k = 0; k < 6; k++)
			suffix[k] = letters[(r >> (10 + 5 * k)) % 36];
		suffix[6] = 0;
		const char *tmp = arena_printf(m->arena, "%s.%s.kiln-%s", dir, base, suffix);
		int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
		if (fd < 0 && errno == EEXIST)
			continue;
		FILE *f = fd < 0 ? NULL : fdopen(fd, "w");
		if (!f) {
			int e = errno;
			if (fd >= 0) {
				close(fd);
				unlink(tmp);
			}
			diag_fail(m->diag, KILN_IO, "cannot create a file beside %s: %s", final, strerror(e));
		}
		add_file(m, tmp, final, true, false);
		tell(m->outputs, REC_FILE, tmp);
		model_track_file(m, f);
		return f;
	}
	diag_fail(m->diag, KILN_IO, "cannot create a file beside %s: too many names taken", final);
}

void outputs_tool(Model *m, long group)
{
	Outputs *o = m->outputs;
	if (!o)
		return;
	if (group > 0) {
		char num[32];
		snprintf(num, sizeof num, "%ld", group);
		tell(o, REC_GROUP, num);
	} else {
		tell(o, REC_GROUP_DONE, "");
	}
}

/* ---- commit and abort ------------------------------------------------- */

void outputs_commit(Model *m)
{
	Outputs *o = m->outputs;
	Diag *d = m->diag;
	const char *lock = arena_printf(m->arena, "%s/.%s.lock", o->dir, o->name);
	/* O_NONBLOCK: a FIFO planted there must not hang the open. */
	int fd = open(lock, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0666);
	if (fd < 0)
		diag_fail(d, KILN_IO, "cannot open the lock file %s: %s", lock,
		          errno == ELOOP ? "it is a symbolic link" : strerror(errno));
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		diag_fail(d, KILN_IO, "the lock file %s is not a regular file", lock);
	}
	while (flock(fd, LOCK_EX) != 0)
		if (errno != EINTR) {
			int e = errno;
			close(fd);
			diag_fail(d, KILN_IO, "cannot lock %s: %s", lock, strerror(e));
		}
	/* Nothing is renamed unless everything can be. */
	for (int i = 0; i < o->nfiles; i++)
		if (o->files[i].keep && lstat(o->files[i].final, &st) == 0 && S_ISDIR(st.st_mode)) {
			close(fd);
			diag_fail(d, KILN_IO, "cannot write %s: it is a folder", o->files[i].final);
		}
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < o->nfiles; i++) {
			OutFile *f = &o->files[i];
			if (!f->keep || f->last != (pass == 1))
				continue;
			if (rename(f->tmp, f->final) != 0) {
				int e = errno;
				close(fd);
				diag_fail(d, KILN_IO, "cannot rename %s to %s: %s", f->tmp, f->final,
				          strerror(e));
			}
			f->keep = false;
			f->tmp = NULL;
		}
	close(fd);
	for (int i = 0; i < o->nfiles; i++)
		if (o->files[i].tmp)
			unlink(o->files[i].tmp);
	rmdir(o->stage);
	tell(o, REC_COMMIT, "");
	stop_cleaner(o);
	m->outputs = NULL;
}

/* The output files open now, closed by model_close on any path (an error
 * long-jumps past the writer's fclose). */
void model_track_file(Model *m, FILE *f)
{
	for (int i = 0; i < 8; i++)
		if (!m->files[i]) {
			m->files[i] = f;
			return;
		}
	KILN_ASSERT(!"more than 8 files open at once");
}

void model_untrack_file(Model *m, FILE *f)
{
	for (int i = 0; i < 8; i++)
		if (m->files[i] == f)
			m->files[i] = NULL;
}

void outputs_abort(Model *m)
{
	Outputs *o = m ? m->outputs : NULL;
	if (!o)
		return;
	for (int i = 0; i < 8; i++)  /* close what is still open before removing it */
		if (m->files[i]) {
			fclose(m->files[i]);
			m->files[i] = NULL;
		}
	for (int i = 0; i < o->nfiles; i++)
		if (o->files[i].tmp)
			unlink(o->files[i].tmp);
	remove_stage(o->stage);
	stop_cleaner(o);
	m->outputs = NULL;
}

/* ---- temporary build folders ------------------------------------------ */

/* Remove name (in folder dfd) and, if it is a folder, all it holds: links
 * are removed, never followed. depth bounds the recursion. */
static void remove_at(int dfd, const char *name, int depth)
{
	if (unlinkat(dfd, name, 0) == 0 || depth > 32)
		return;
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	struct dirent *e;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			remove_at(dirfd(d), e->d_name, depth + 1);
	closedir(d);
	unlinkat(dfd, name, AT_REMOVEDIR);
}

void compile_remove_tree(const char *dir)
{
	remove_at(AT_FDCWD, dir, 0);
}

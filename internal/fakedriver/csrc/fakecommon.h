// What every fake library shares: a call log and integer settings from the
// environment. Define FAKE_LOG_ENV, the variable that names the log file,
// before including it.
#ifndef GPUINIT_FAKE_COMMON_H
#define GPUINIT_FAKE_COMMON_H

#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <time.h>
#include <unistd.h>

// logcall appends one line to the file FAKE_LOG_ENV names, if it is set.
__attribute__((format(printf, 1, 2), unused)) static void logcall(const char *fmt, ...) {
	const char *path = getenv(FAKE_LOG_ENV);
	if (!path || !*path) return;
	FILE *f = fopen(path, "a");
	if (!f) return;
	va_list ap;
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	if (getenv("GPUINIT_FAKE_LOG_PID")) fprintf(f, " pid=%d", (int)getpid());
	fputc('\n', f);
	fclose(f);
}

// envint is the integer the variable name holds, or def when it is unset.
__attribute__((unused)) static int envint(const char *name, int def) {
	const char *v = getenv(name);
	return v && *v ? atoi(v) : def;
}

// fake_init is what a fake's init call (cuInit, hipInit) does first, as the
// variables named <prefix>_HANG, _CRASH, _DELAY_MS, _FAIL_FILE and
// _FAIL_TIMES say: hang for ever, crash on a bad pointer, sleep, or fail with
// code for the first _FAIL_TIMES calls counted in _FAIL_FILE, across
// processes (a counter under flock), then succeed. It returns the code to
// fail with, or 0 to go on; without _FAIL_FILE, code always applies.
__attribute__((unused)) static int fake_init(const char *prefix, int code) {
	char name[128];
	snprintf(name, sizeof name, "%s_DELAY_MS", prefix);
	int delay = envint(name, 0);
	if (delay > 0) {
		struct timespec ts = {delay / 1000, (long)(delay % 1000) * 1000000L};
		while (nanosleep(&ts, &ts) != 0) {
		}
	}
	snprintf(name, sizeof name, "%s_HANG", prefix);
	if (getenv(name))
		for (;;) pause();
	snprintf(name, sizeof name, "%s_CRASH", prefix);
	if (getenv(name)) *(volatile int *)0 = 1;
	snprintf(name, sizeof name, "%s_FAIL_FILE", prefix);
	const char *counter = getenv(name);
	if (!counter || !*counter) return code;
	snprintf(name, sizeof name, "%s_FAIL_TIMES", prefix);
	int times = envint(name, 0);
	int fd = open(counter, O_RDWR | O_CREAT, 0644);
	if (fd < 0) return code;
	flock(fd, LOCK_EX);
	char buf[32] = {0};
	ssize_t n = read(fd, buf, sizeof buf - 1);
	int seen = n > 0 ? atoi(buf) : 0;
	int fail = seen < times;
	if (fail) {
		int len = snprintf(buf, sizeof buf, "%d\n", seen + 1);
		if (lseek(fd, 0, SEEK_SET) == 0 && write(fd, buf, (size_t)len) == len && ftruncate(fd, len) == 0) {
		}
	}
	flock(fd, LOCK_UN);
	close(fd);
	return fail ? code : 0;
}

// hidden_by reports whether the visibility variable name hides every device,
// as the vendors' runtimes read it: set but empty, or a first entry that
// names nothing ("-1": the list ends before it starts).
__attribute__((unused)) static int hidden_by(const char *name) {
	const char *v = getenv(name);
	if (!v) return 0;
	while (*v == ' ') v++;
	return *v == '\0' || *v == ',' || *v == '-';
}

// fake_elapsed_ms is the milliseconds since *start (CLOCK_MONOTONIC), which
// it sets on the first call: a wait's timeout is by the clock, as the real
// libraries' are, not by counting polls, which a loaded machine stretches.
static inline unsigned long fake_elapsed_ms(struct timespec *start) {
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (start->tv_sec == 0 && start->tv_nsec == 0) {
		*start = now;
		return 0;
	}
	return (unsigned long)((now.tv_sec - start->tv_sec) * 1000 + (now.tv_nsec - start->tv_nsec) / 1000000);
}

// fake_next_line reads the next complete line of the file the variable env
// names, from *offset on, into line, and moves *offset past it; 0 if there is
// none yet (a test appends lines as it goes).
static inline int fake_next_line(const char *env, long *offset, char *line, size_t len) {
	const char *path = getenv(env);
	if (!path || !*path) return 0;
	FILE *f = fopen(path, "r");
	if (!f) return 0;
	int got = 0;
	if (fseek(f, *offset, SEEK_SET) == 0 && fgets(line, (int)len, f) && strchr(line, '\n')) {
		*offset = ftell(f);
		got = 1;
	}
	fclose(f);
	return got;
}

// An event wait of a fake blocks on its events file, as a real library's
// blocks in the kernel: fake_lines_watch starts watching the file the
// variable env names (inotify, before the wait first reads it, so that no
// line appended after that read is missed), fake_lines_wait blocks until the
// file changes or ms pass, and fake_lines_done ends the watch. So a wait
// takes a test's line as soon as it is appended, and uses no CPU before,
// however long its timeout. Where the file cannot be watched (no file, or
// inotify's limits reached), fake_lines_wait looks at it every 2 ms instead.
struct fake_lines {
	int fd;        // the inotify instance; -1 where there is none
	int has_file;  // env names a file to look at
};

static inline struct fake_lines fake_lines_watch(const char *env) {
	const char *path = getenv(env);
	struct fake_lines w = {-1, path && *path};
	if (!w.has_file) return w;
	w.fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (w.fd >= 0 && inotify_add_watch(w.fd, path, IN_MODIFY) < 0) {
		close(w.fd);
		w.fd = -1;
	}
	return w;
}

static inline void fake_lines_wait(struct fake_lines *w, unsigned long ms) {
	if (w->fd < 0 && w->has_file && ms > 2) ms = 2; // no watch: look again soon
	struct pollfd p = {w->fd, POLLIN, 0};
	if (poll(&p, w->fd >= 0 ? 1 : 0, ms > 600000 ? 600000 : (int)ms) > 0) {
		char buf[4096];
		while (read(w->fd, buf, sizeof buf) > 0) {
		}
	}
}

static inline void fake_lines_done(struct fake_lines *w) {
	if (w->fd >= 0) close(w->fd);
	w->fd = -1;
}

#endif

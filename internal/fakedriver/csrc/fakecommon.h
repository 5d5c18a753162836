// What every fake library shares: a call log and integer settings from the
// environment. Define FAKE_LOG_ENV, the variable that names the log file,
// before including it.
#ifndef GPUINIT_FAKE_COMMON_H
#define GPUINIT_FAKE_COMMON_H

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
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

#endif

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

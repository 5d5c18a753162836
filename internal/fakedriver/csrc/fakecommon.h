// What every fake library shares: a call log and integer settings from the
// environment. Define FAKE_LOG_ENV, the variable that names the log file,
// before including it.
#ifndef GPUINIT_FAKE_COMMON_H
#define GPUINIT_FAKE_COMMON_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

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
	fputc('\n', f);
	fclose(f);
}

// envint is the integer the variable name holds, or def when it is unset.
__attribute__((unused)) static int envint(const char *name, int def) {
	const char *v = getenv(name);
	return v && *v ? atoi(v) : def;
}

#endif

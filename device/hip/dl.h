// Run-time loading for the cuda and hip backends: dlopen, dlsym and binding a table of
// function pointers, with dlerror read in the same C call as the failure it
// explains (dlerror is per thread, and a goroutine may move between threads
// between two cgo calls). Libraries are never closed.
//
// device/cuda/dl.h and device/hip/dl.h are the same file, kept twice so that
// cgo stays inside the two backend packages (and their builds notice a change
// to it); device/internal/dynload's tests fail if they differ.
#ifndef GPUINIT_DL_H
#define GPUINIT_DL_H

#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// gpuinit_dl_open loads name (with noload, only if the process already has
// it) and reports the file loaded.
static void *gpuinit_dl_open(const char *name, int noload, char *path, size_t pathlen, char *err, size_t errlen) {
	dlerror();
	void *h = dlopen(name, RTLD_NOW | (noload ? RTLD_NOLOAD : RTLD_LOCAL));
	if (!h) {
		const char *e = dlerror();
		snprintf(err, errlen, "%s", e ? e : "dlopen failed");
		return NULL;
	}
	struct link_map *m = NULL;
	if (dlinfo(h, RTLD_DI_LINKMAP, &m) == 0 && m && m->l_name && m->l_name[0])
		snprintf(path, pathlen, "%s", m->l_name);
	else
		snprintf(path, pathlen, "%s", name);
	return h;
}

// gpuinit_symbol is one function to bind: its name, where its pointer goes in
// the table, and whether the backend cannot do without it.
struct gpuinit_symbol {
	const char *name;
	size_t offset;
	int required;
};

// gpuinit_dl_bind resolves syms into a table of n bytes, then copies it to
// table: all or nothing. It returns 0, or -1 with the first missing required
// function's name and dlerror's text. Optional functions may stay NULL.
static int gpuinit_dl_bind(void *h, const struct gpuinit_symbol *syms, size_t nsyms, void *table, size_t n,
                           char *missing, size_t missinglen, char *err, size_t errlen) {
	char *t = calloc(1, n);
	if (!t) {
		snprintf(missing, missinglen, "(the function table)");
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < nsyms; i++) {
		dlerror();
		void *p = dlsym(h, syms[i].name);
		if (!p && syms[i].required) {
			const char *e = dlerror();
			snprintf(missing, missinglen, "%s", syms[i].name);
			snprintf(err, errlen, "%s", e ? e : "symbol not found");
			free(t);
			return -1;
		}
		memcpy(t + syms[i].offset, &p, sizeof p);
	}
	memcpy(table, t, n);
	free(t);
	return 0;
}

#endif

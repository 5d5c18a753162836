// A fake libcurand.so.10 for gpuinit's tests: Philox4x32-10 generators with
// cuRAND's host ordering (65536 interleaved subsequences), for the fake
// libcuda's "device" memory, which is host memory. Device generators need a
// context current on the calling thread, as the real library's do; the fake
// asks libcuda through cuCtxGetCurrent, resolved in the process at run time.
//
//   GPUINIT_FAKE_CURAND_LOG         append one line per call to this file
//   GPUINIT_FAKE_CURAND_HANG_DRAW   if set to N, the process's Nth device draw
//                                   (from 1) never returns, as on a GPU whose
//                                   kernels never complete; it logs
//                                   "curandGenerate hangs"
//
// Build: cc -shared -fPIC -Wl,-soname,libcurand.so.10 -o libcurand.so.10 fakecurand.c -ldl
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fakephilox.h"

#define FAKE_LOG_ENV "GPUINIT_FAKE_CURAND_LOG"
#include "fakecommon.h"

typedef int curandStatus_t;
struct curandGenerator_st { int host; unsigned long long seed, offset; };
typedef struct curandGenerator_st *curandGenerator_t;

// has_context asks the driver in the process whether this thread has one.
static int has_context(void) {
	int (*get)(void **) = (int (*)(void **))dlsym(RTLD_DEFAULT, "cuCtxGetCurrent");
	void *ctx = 0;
	if (!get) {
		void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
		if (h) get = (int (*)(void **))dlsym(h, "cuCtxGetCurrent");
	}
	return get && get(&ctx) == 0 && ctx != 0;
}

static curandStatus_t create(curandGenerator_t *g, int type, int host) {
	if (!g) return 102;
	if (type != 161) return 103; // only PHILOX4_32_10
	if (!host && !has_context()) return 203; // INITIALIZATION_FAILED
	*g = calloc(1, sizeof **g);
	(*g)->host = host;
	return 0;
}

curandStatus_t curandCreateGenerator(curandGenerator_t *g, int type) { logcall("curandCreateGenerator"); return create(g, type, 0); }
curandStatus_t curandCreateGeneratorHost(curandGenerator_t *g, int type) { logcall("curandCreateGeneratorHost"); return create(g, type, 1); }
curandStatus_t curandDestroyGenerator(curandGenerator_t g) { logcall("curandDestroyGenerator"); free(g); return 0; }
curandStatus_t curandSetPseudoRandomGeneratorSeed(curandGenerator_t g, unsigned long long s) { g->seed = s; return 0; }
curandStatus_t curandSetGeneratorOffset(curandGenerator_t g, unsigned long long o) { g->offset = o; return 0; }


// device_draws counts device draws, for GPUINIT_FAKE_CURAND_HANG_DRAW.
static int device_draws;

curandStatus_t curandGenerate(curandGenerator_t g, unsigned int *out, size_t n) {
	logcall("curandGenerate");
	if (!g->host && !has_context()) return 201;
	const char *hang = getenv("GPUINIT_FAKE_CURAND_HANG_DRAW");
	if (!g->host && hang && *hang && __atomic_add_fetch(&device_draws, 1, __ATOMIC_SEQ_CST) == atoi(hang)) {
		logcall("curandGenerate hangs");
		for (;;) pause();
	}
	for (size_t i = 0; i < n; i++) {
		unsigned long long e = g->offset + i, j = e / 4, h = j >> 16;
		unsigned c[4] = {(unsigned)h, (unsigned)(h >> 32), (unsigned)(j & 0xFFFF), 0};
		fake_philox(c, (unsigned)g->seed, (unsigned)(g->seed >> 32));
		out[i] = c[e % 4];
	}
	g->offset += n;
	return 0;
}

// A fake libhiprand.so.1 for gpuinit's tests: Philox4x32-10 generators with
// rocRAND's ordering (one sequential stream), drawing into the fake
// libamdhip64's "device" memory, which is host memory.
//
//   GPUINIT_FAKE_HIPRAND_LOG   append one line per call to this file
//   GPUINIT_FAKE_HIPRAND_FAIL  the status hiprandGenerate returns instead of drawing,
//                              e.g. 201, what rocRAND answers on a gfx target it has no code for
//
// Build: cc -shared -fPIC -Wl,-soname,libhiprand.so.1 -o libhiprand.so.1 fakehiprand.c
#include <stdio.h>
#include <stdlib.h>

#include "fakephilox.h"

#define FAKE_LOG_ENV "GPUINIT_FAKE_HIPRAND_LOG"
#include "fakecommon.h"

typedef int hiprandStatus_t;
struct hiprandGenerator_st { unsigned long long seed, offset; };
typedef struct hiprandGenerator_st *hiprandGenerator_t;

hiprandStatus_t hiprandCreateGenerator(hiprandGenerator_t *g, int type) {
	logcall("hiprandCreateGenerator");
	if (!g) return 102;
	if (type != 405) return 103; // hipRAND's PHILOX4_32_10
	*g = calloc(1, sizeof **g);
	return 0;
}
hiprandStatus_t hiprandDestroyGenerator(hiprandGenerator_t g) { logcall("hiprandDestroyGenerator"); free(g); return 0; }
hiprandStatus_t hiprandSetPseudoRandomGeneratorSeed(hiprandGenerator_t g, unsigned long long s) { g->seed = s; return 0; }
hiprandStatus_t hiprandSetGeneratorOffset(hiprandGenerator_t g, unsigned long long o) { g->offset = o; return 0; }


hiprandStatus_t hiprandGenerate(hiprandGenerator_t g, unsigned int *out, size_t n) {
	logcall("hiprandGenerate");
	const char *fail = getenv("GPUINIT_FAKE_HIPRAND_FAIL");
	if (fail && *fail) return atoi(fail);
	for (size_t i = 0; i < n; i++) {
		unsigned long long e = g->offset + i, j = e / 4;
		unsigned c[4] = {(unsigned)j, (unsigned)(j >> 32), 0, 0};
		fake_philox(c, (unsigned)g->seed, (unsigned)(g->seed >> 32));
		out[i] = c[e % 4];
	}
	g->offset += n;
	return 0;
}

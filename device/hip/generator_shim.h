// hipRAND as the hip backend uses it: declared here (no ROCm header at build
// time), one table filled by dlsym when the first generator is created.
#ifndef GPUINIT_HIPRAND_SHIM_H
#define GPUINIT_HIPRAND_SHIM_H

#include <stddef.h>

typedef int hiprandStatus_t;
typedef struct hiprandGenerator_st *hiprandGenerator_t;
#define HIPRAND_STATUS_SUCCESS 0
// hipRAND's own value: rocRAND's enum differs (404); use the library you call.
#define HIPRAND_RNG_PSEUDO_PHILOX4_32_10 405

struct gpuinit_hiprand {
	hiprandStatus_t (*hiprandCreateGenerator)(hiprandGenerator_t *, int);
	hiprandStatus_t (*hiprandDestroyGenerator)(hiprandGenerator_t);
	hiprandStatus_t (*hiprandSetPseudoRandomGeneratorSeed)(hiprandGenerator_t, unsigned long long);
	hiprandStatus_t (*hiprandSetGeneratorOffset)(hiprandGenerator_t, unsigned long long);
	hiprandStatus_t (*hiprandGenerate)(hiprandGenerator_t, unsigned int *, size_t);
};
extern struct gpuinit_hiprand gpuinit_hiprand;

static hiprandStatus_t gpuinit_hiprandCreate(hiprandGenerator_t *g) {
	return gpuinit_hiprand.hiprandCreateGenerator(g, HIPRAND_RNG_PSEUDO_PHILOX4_32_10);
}
static hiprandStatus_t gpuinit_hiprandDestroy(hiprandGenerator_t g) { return gpuinit_hiprand.hiprandDestroyGenerator(g); }
static hiprandStatus_t gpuinit_hiprandSetSeed(hiprandGenerator_t g, unsigned long long s) {
	return gpuinit_hiprand.hiprandSetPseudoRandomGeneratorSeed(g, s);
}
static hiprandStatus_t gpuinit_hiprandSetOffset(hiprandGenerator_t g, unsigned long long o) {
	return gpuinit_hiprand.hiprandSetGeneratorOffset(g, o);
}
static hiprandStatus_t gpuinit_hiprandGenerate(hiprandGenerator_t g, void *dst, size_t n) {
	return gpuinit_hiprand.hiprandGenerate(g, (unsigned int *)dst, n);
}

#endif

// cuRAND as the cuda backend uses it: declared here (no vendor header at build
// time), one table filled by dlsym when the first generator is created, in
// both build modes: even with -tags cudalink, which links libcuda, cuRAND is
// loaded at run time, so that a binary without it starts and serves without
// device generators.
#ifndef GPUINIT_CURAND_SHIM_H
#define GPUINIT_CURAND_SHIM_H

#include "shim.h"

typedef int curandStatus_t;
typedef struct curandGenerator_st *curandGenerator_t;
#define CURAND_STATUS_SUCCESS 0
#define CURAND_RNG_PSEUDO_PHILOX4_32_10 161

struct gpuinit_curand {
	curandStatus_t (*curandCreateGenerator)(curandGenerator_t *, int);
	curandStatus_t (*curandCreateGeneratorHost)(curandGenerator_t *, int);
	curandStatus_t (*curandDestroyGenerator)(curandGenerator_t);
	curandStatus_t (*curandSetPseudoRandomGeneratorSeed)(curandGenerator_t, unsigned long long);
	curandStatus_t (*curandSetGeneratorOffset)(curandGenerator_t, unsigned long long);
	curandStatus_t (*curandGenerate)(curandGenerator_t, unsigned int *, size_t);
};
extern struct gpuinit_curand gpuinit_rand;
#define CURAND(f) gpuinit_rand.f

static curandStatus_t gpuinit_curandCreate(curandGenerator_t *g, int host) {
	if (host) return CURAND(curandCreateGeneratorHost)(g, CURAND_RNG_PSEUDO_PHILOX4_32_10);
	return CURAND(curandCreateGenerator)(g, CURAND_RNG_PSEUDO_PHILOX4_32_10);
}
static curandStatus_t gpuinit_curandDestroy(curandGenerator_t g) { return CURAND(curandDestroyGenerator)(g); }
static curandStatus_t gpuinit_curandSetSeed(curandGenerator_t g, unsigned long long s) {
	return CURAND(curandSetPseudoRandomGeneratorSeed)(g, s);
}
static curandStatus_t gpuinit_curandSetOffset(curandGenerator_t g, unsigned long long o) {
	return CURAND(curandSetGeneratorOffset)(g, o);
}
// The device pointer is an integer handle to Go; cast it here, not in Go.
static curandStatus_t gpuinit_curandGenerateDevice(curandGenerator_t g, CUdeviceptr p, size_t n) {
	return CURAND(curandGenerate)(g, (unsigned int *)(uintptr_t)p, n);
}
static curandStatus_t gpuinit_curandGenerateHost(curandGenerator_t g, unsigned int *dst, size_t n) {
	return CURAND(curandGenerate)(g, dst, n);
}

#endif

// The fake libcuda's devices, as a process sees them under the variables
// fakecuda.c lists: which device is which, and how many there are. Included
// by fakecuda.c.
struct fake_device {
	const char *name;
	unsigned long long total;
	int major, minor, sms, integrated, domain, bus, slot;
	unsigned char uuid[16];
};

// The most devices a process sees: 2, or 4 with both MIG instances.
#define MAX_DEVICES 4

static const struct fake_device devices[2] = {
	{"Fake NVIDIA H200", 150754820096ULL, 9, 0, 132, 0, 0, 0x18, 0,
	 {0xf1, 0x2e, 0x3d, 0x4c, 0x9b, 0x8a, 0x47, 0x96, 0x85, 0xa4, 0xb3, 0xc2, 0xd1, 0xe0, 0xff, 0x0e}},
	{"Fake NVIDIA integrated sm_86", 85899345920ULL, 8, 6, 108, 1, 1, 0x3b, 2,
	 {0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10}},
};

// both_slices is whether GPUINIT_FAKE_CUDA_MIG is "1,2": devices 1 and 2 are
// the two MIG instances.
static int both_slices(void) {
	const char *v = getenv("GPUINIT_FAKE_CUDA_MIG");
	return v && strcmp(v, "1,2") == 0;
}

static int ndevices(void) {
	int max = both_slices() ? MAX_DEVICES : 2;
	int n = envint("GPUINIT_FAKE_CUDA_DEVICES", both_slices() ? 3 : 2);
	return n < 0 ? 0 : n > max ? max : n;
}

// slice is which MIG instance device d is (1 or 2), or 0 for a whole GPU.
static int slice(CUdevice d) {
	if (both_slices()) return d == 1 || d == 2 ? d : 0;
	int m = envint("GPUINIT_FAKE_CUDA_MIG", 0);
	return d == 1 && (m == 1 || m == 2) ? m : 0;
}

static const struct fake_device mig_slice = {"Fake NVIDIA A100 MIG 1g.10gb", 10737418240ULL, 8, 0, 14, 0, 1, 0x3b, 2,
	{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10}};

static const struct fake_device gb10 = {"Fake NVIDIA GB10", 128849018880ULL, 12, 1, 48, 1, 0, 0x0f, 0,
	{0xb1, 0x0b, 0x10, 0x00, 0x5a, 0xa5, 0x4e, 0x21, 0x9c, 0x3d, 0x77, 0x01, 0x02, 0x03, 0x04, 0x05}};

// device is d as the process sees it: a MIG slice in MIG mode; device 3 the
// GB10-like one.
static const struct fake_device *device(CUdevice d) { return slice(d) ? &mig_slice : d == 3 ? &gb10 : &devices[d]; }

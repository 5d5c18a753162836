// Philox4x32-10 for the fake RNG libraries (cuRAND's and hipRAND's), written
// from the algorithm's definition: ten rounds, the key bumped between rounds.
#ifndef GPUINIT_FAKE_PHILOX_H
#define GPUINIT_FAKE_PHILOX_H

static void fake_philox(unsigned c[4], unsigned k0, unsigned k1) {
	for (int r = 0; r < 10; r++) {
		if (r) { k0 += 0x9E3779B9u; k1 += 0xBB67AE85u; }
		unsigned long long p0 = (unsigned long long)0xD2511F53u * c[0];
		unsigned long long p1 = (unsigned long long)0xCD9E8D57u * c[2];
		unsigned n0 = (unsigned)(p1 >> 32) ^ c[1] ^ k0, n2 = (unsigned)(p0 >> 32) ^ c[3] ^ k1;
		c[1] = (unsigned)p1; c[3] = (unsigned)p0; c[0] = n0; c[2] = n2;
	}
}

#endif

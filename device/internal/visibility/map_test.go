package visibility

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pytorchUUIDs are the eight GPUs of PyTorch's test_partial_uuid_resolver.
var pytorchUUIDs = []string{
	"GPU-9942190a-aa31-4ff1-4aa9-c388d80f85f1",
	"GPU-9e8d35e3-a134-0fdd-0e01-23811fdbd293",
	"GPU-e429a63e-c61c-4795-b757-5132caeb8e70",
	"GPU-eee1dfbc-0a0f-6ad8-5ff6-dc942a8b9d98",
	"GPU-bbcd6503-5150-4e92-c266-97cc4390d04e",
	"GPU-472ea263-58d7-410d-cc82-f7fdece5bd28",
	"GPU-e56257c4-947f-6a5b-7ec9-0f45567ccf4e",
	"GPU-1c20e77d-1c1a-d9ed-fe37-18b8466a78ad",
}

// eightGPUs is one model in PCI order, so every CUDA order is NVML's.
func eightGPUs() []Physical {
	var out []Physical
	for i, u := range pytorchUUIDs {
		out = append(out, Physical{UUID: u, PCIBusID: fmt.Sprintf("00000000:%02x:00.0", i+1), Index: i, Name: "NVIDIA H100 80GB HBM3", Speed: 1})
	}
	return out
}

// uuids is what the entries are, in ordinal order; it checks the ordinals.
func uuids(t *testing.T, entries []Entry) []string {
	t.Helper()
	var out []string
	for i, e := range entries {
		assert.Equal(t, i, e.Ordinal)
		out = append(out, e.UUID())
	}
	return out
}

func TestMapCUDAResolvesEntries(t *testing.T) {
	u := pytorchUUIDs
	for _, tc := range []struct {
		name, value string
		want        []string
	}{
		{name: "a unique prefix names its GPU", value: "GPU-9e8d35e3", want: []string{u[1]}},
		{name: "prefixes in the order written", value: "GPU-e4,GPU-9e8d35e3", want: []string{u[2], u[1]}},
		{name: "short prefixes that are unique", value: "GPU-9e8d35e3,GPU-1,GPU-47", want: []string{u[1], u[7], u[5]}},
		{name: "a full UUID", value: u[3], want: []string{u[3]}},
		{name: "an unknown UUID first is no device", value: "GPU-123,GPU-9e8d35e3"},
		{name: "an unknown UUID ends the list", value: "GPU-9e8d35e3,GPU-123,GPU-47", want: []string{u[1]}},
		{name: "an ambiguous prefix ends the list", value: "GPU-9e8d35e3,GPU-e,GPU-47", want: []string{u[1]}},
		{name: "two prefixes of one GPU empty the list", value: "GPU-9e8d35e3,GPU-47,GPU-9e8"},
		{name: "GPU- alone is ambiguous", value: "GPU-"},
		{name: "a prefix is case-sensitive", value: "GPU-9E8D35E3"},
		{name: "indices in the order written", value: "7,0", want: []string{u[7], u[0]}},
		{name: "an index out of range ends the list", value: "1,9,0", want: []string{u[1]}},
		{name: "an index out of range first is no device", value: "8"},
		{name: "a huge index is out of range", value: "1,99999999999999999999", want: []string{u[1]}},
		{name: "a repeated index is no device", value: "0,1,0"},
		{name: "set but empty is no device", value: ""},
		{name: "a MIG UUID on a host without MIG names nothing", value: "MIG-89c850dc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := ParseCUDA(tc.value)
			for _, rule := range []MIGRule{MIGOneDevice, MIGOnePerInstance} {
				entries, err := rule.Map(spec, eightGPUs(), "")
				require.NoError(t, err)
				assert.Equal(t, tc.want, uuids(t, entries), rule)
				for _, e := range entries {
					assert.Equal(t, EnvCUDA, e.Var)
					assert.NotEmpty(t, e.Why)
				}
			}
		})
	}
}

func TestMapCUDAWhyIsTheEntry(t *testing.T) {
	entries, err := Map(ParseCUDA("GPU-47, 0"), eightGPUs(), "")
	require.NoError(t, err)
	require.Len(t, entries, 1)
	assert.Equal(t, "GPU-47", entries[0].Why)
	entries, err = Map(ParseCUDA("3, 1"), eightGPUs(), "")
	require.NoError(t, err)
	assert.Equal(t, []string{"3", " 1"}, []string{entries[0].Why, entries[1].Why})
	assert.Equal(t, 3, entries[0].Physical.Index)
	assert.Contains(t, entries[1].String(), `1 GPU-9e8d35e3`)
	assert.Contains(t, entries[1].String(), `by CUDA_VISIBLE_DEVICES " 1"`)
	all, err := Map(Unset(CUDA, EnvCUDA), eightGPUs(), "")
	require.NoError(t, err)
	assert.Len(t, all, 8)
	assert.Equal(t, "", all[0].Var+all[0].Why, "unset: no variable chose it")
	assert.Equal(t, pytorchUUIDs, uuids(t, all))
}

// mixedHost is a slow card on the first bus and two fast ones after it,
// passed in no particular order.
func mixedHost() []Physical {
	return []Physical{
		{UUID: "GPU-c", PCIBusID: "0000:03:00.0", Index: 2, Name: "RTX 4090", Speed: 30},
		{UUID: "GPU-a", PCIBusID: "0000:01:00.0", Index: 0, Name: "RTX 3060", Speed: 10},
		{UUID: "GPU-b", PCIBusID: "00000000:02:00.0", Index: 1, Name: "RTX 4090", Speed: 30},
	}
}

func TestMapCUDAOrders(t *testing.T) {
	for _, tc := range []struct {
		name, order string
		spec        Spec
		want        []string
	}{
		{name: "the default is fastest first, ties by bus", spec: Unset(CUDA, EnvCUDA), want: []string{"GPU-b", "GPU-c", "GPU-a"}},
		{name: "FASTEST_FIRST by name", order: OrderFastestFirst, spec: Unset(CUDA, EnvCUDA), want: []string{"GPU-b", "GPU-c", "GPU-a"}},
		{name: "PCI_BUS_ID is bus order", order: OrderPCIBusID, spec: Unset(CUDA, EnvCUDA), want: []string{"GPU-a", "GPU-b", "GPU-c"}},
		{name: "index 0 is the fastest by default", spec: ParseCUDA("0"), want: []string{"GPU-b"}},
		{name: "index 0 is the first bus under PCI_BUS_ID", order: OrderPCIBusID, spec: ParseCUDA("0"), want: []string{"GPU-a"}},
		{name: "indices count in the order, then keep the list's", spec: ParseCUDA("2,0"), want: []string{"GPU-a", "GPU-b"}},
		{name: "a UUID names the same GPU in any order", order: OrderPCIBusID, spec: ParseCUDA("GPU-c,GPU-a"), want: []string{"GPU-c", "GPU-a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			entries, err := Map(tc.spec, mixedHost(), tc.order)
			require.NoError(t, err)
			assert.Equal(t, tc.want, uuids(t, entries))
		})
	}
}

func TestMapCUDARefuses(t *testing.T) {
	_, err := Map(Unset(CUDA, EnvCUDA), mixedHost(), "SLOWEST_FIRST")
	assert.ErrorIs(t, err, ErrOrder)
	_, err = Map(ParseROCm(EnvHIP, "0"), mixedHost(), "")
	assert.ErrorContains(t, err, "MapROCm")
	_, err = Map(Unset(CUDA, EnvCUDA), append(mixedHost(), Physical{UUID: "GPU-a", PCIBusID: "0000:09:00.0"}), "")
	assert.ErrorContains(t, err, "two devices have UUID GPU-a")
	entries, err := Map(Spec{}, mixedHost(), "")
	require.NoError(t, err, "the zero Spec is CUDA's, unset")
	assert.Len(t, entries, 3)
}

// amdHost is ROCr's comment's four GPUs, on KFD nodes 2 to 5 after two CPU
// nodes, passed out of order, with a fifth GPU without a unique id.
func amdHost() []Physical {
	return []Physical{
		{UUID: AMDUUID(0xBABAABBAABBABABA), PCIBusID: "0000:43:00.0", Index: 4, Name: "MI210"},
		{UUID: AMDUUID(0xBABABABABABABABA), PCIBusID: "0000:03:00.0", Index: 2, Name: "MI210"},
		{UUID: AMDUUID(0xABBABABABABAABBA), PCIBusID: "0000:63:00.0", Index: 5, Name: "MI210"},
		{UUID: AMDUUID(0xABBAABBAABBAABBA), PCIBusID: "0000:23:00.0", Index: 3, Name: "MI210"},
	}
}

// gpuN names amdHost's GPUs by ROCr's index.
var gpuN = []string{
	AMDUUID(0xBABABABABABABABA), AMDUUID(0xABBAABBAABBAABBA),
	AMDUUID(0xBABAABBAABBABABA), AMDUUID(0xABBABABABABAABBA),
}

func TestMapROCm(t *testing.T) {
	g := gpuN
	for _, tc := range []struct {
		name      string
		env       map[string]string
		want      []string
		wantVar   string
		initFails bool
	}{
		{name: "nothing set is every GPU in node order", env: map[string]string{}, want: g},
		{name: "ROCr: empty is no device", env: map[string]string{EnvROCR: ""}},
		{name: "ROCr: -1 is no device", env: map[string]string{EnvROCR: "-1"}},
		{name: "ROCr: GPU-XX matches no GPU", env: map[string]string{EnvROCR: "GPU-XX"}},
		{name: "ROCr's example B: an index out of range ends the list", env: map[string]string{EnvROCR: "3,GPU-BABABABABABABABA,4"}, want: []string{g[3], g[0]}, wantVar: EnvROCR},
		// ROCr's comment says example C shows GPUs 1 and 2; its code ends the
		// list at the repeat, and the code is what runs.
		{name: "ROCr's example C: a repeat ends the list", env: map[string]string{EnvROCR: "1,GPU-ABBAABBAABBAABBA,GPU-XX"}, want: []string{g[1]}, wantVar: EnvROCR},
		{name: "ROCr's example D: a unique prefix", env: map[string]string{EnvROCR: "3,GPU-BABAABBA,GPU-XX"}, want: []string{g[3], g[2]}, wantVar: EnvROCR},
		{name: "ROCr: UUIDs match in any case", env: map[string]string{EnvROCR: "gpu-babaabba"}, want: []string{g[2]}, wantVar: EnvROCR},
		{name: "ROCr: an ambiguous prefix ends the list", env: map[string]string{EnvROCR: "1,GPU-BABA,0"}, want: []string{g[1]}, wantVar: EnvROCR},
		{name: "ROCr: a repeated index ends the list", env: map[string]string{EnvROCR: "0,0,1"}, want: []string{g[0]}, wantVar: EnvROCR},
		{name: "ROCr: hex and octal, 010 out of range", env: map[string]string{EnvROCR: "0x2,010"}, want: []string{g[2]}, wantVar: EnvROCR},
		{name: "ROCr: an index narrowed to 32 bits", env: map[string]string{EnvROCR: "4294967297"}, want: []string{g[1]}, wantVar: EnvROCR},
		{name: "ROCr: an empty entry it reaches fails hsa_init", env: map[string]string{EnvROCR: "0,,1"}, initFails: true},
		{name: "ROCr: an empty entry past the GPU count is never read", env: map[string]string{EnvROCR: "0,1,2,3,,"}, want: g, wantVar: EnvROCR},
		{name: "ROCr: an ending entry before the empty one wins", env: map[string]string{EnvROCR: "0,9,,1"}, want: []string{g[0]}, wantVar: EnvROCR},
		{name: "HIP: indices", env: map[string]string{EnvHIP: "1,0"}, want: []string{g[1], g[0]}, wantVar: EnvHIP},
		{name: "HIP: a repeated index is skipped", env: map[string]string{EnvHIP: "0,0,1"}, want: []string{g[0], g[1]}, wantVar: EnvHIP},
		{name: "HIP: an index out of range ends the list", env: map[string]string{EnvHIP: "1,4,0"}, want: []string{g[1]}, wantVar: EnvHIP},
		{name: "HIP: a blank ends the list", env: map[string]string{EnvHIP: "1, 0"}, want: []string{g[1]}, wantVar: EnvHIP},
		{name: "HIP: empty is no device", env: map[string]string{EnvHIP: "", EnvCUDA: "0"}},
		{name: "HIP: indexes what ROCr left", env: map[string]string{EnvROCR: "2,3", EnvHIP: "1"}, want: []string{g[3]}, wantVar: EnvHIP},
		{name: "HIP: an index past what ROCr left ends the list", env: map[string]string{EnvROCR: "2,3", EnvHIP: "0,2"}, want: []string{g[2]}, wantVar: EnvHIP},
		{name: "HIP: ROCr's choice shows when HIP is unset", env: map[string]string{EnvROCR: "2"}, want: []string{g[2]}, wantVar: EnvROCR},
		{name: "HIP: a UUID prefix", env: map[string]string{EnvHIP: "GPU-abbaabba"}, want: []string{g[1]}, wantVar: EnvHIP},
		{name: "HIP: an ambiguous UUID takes the first GPU", env: map[string]string{EnvHIP: "GPU-abba"}, want: []string{g[1]}, wantVar: EnvHIP},
		{name: "HIP: UUIDs are case-sensitive", env: map[string]string{EnvHIP: "GPU-ABBAABBA"}},
		{name: "HIP: a UUID matches as a substring", env: map[string]string{EnvHIP: "GPU-ab,0"}, want: []string{g[1], g[0]}, wantVar: EnvHIP},
		{name: "HIP: a UUID and its index are one GPU", env: map[string]string{EnvHIP: "GPU-abbaabba,1,0"}, want: []string{g[1], g[0]}, wantVar: EnvHIP},
		{name: "HIP: CUDA_VISIBLE_DEVICES when HIP_VISIBLE_DEVICES is unset", env: map[string]string{EnvCUDA: "3"}, want: []string{g[3]}, wantVar: EnvCUDA},
		{name: "HIP: CUDA's reading is not HIP's", env: map[string]string{EnvCUDA: "1gpu"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rocr, hip := LookupROCm(mapEnv(tc.env))
			entries, err := MapROCm(rocr, hip, amdHost())
			if tc.initFails {
				assert.ErrorIs(t, err, ErrInitFails)
				assert.Nil(t, entries)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, uuids(t, entries))
			for _, e := range entries {
				assert.Equal(t, tc.wantVar, e.Var)
			}
		})
	}
}

func TestMapROCmGPUWithoutUUID(t *testing.T) {
	host := append(amdHost(), Physical{UUID: AMDUUID(0), PCIBusID: "0000:83:00.0", Index: 7, Name: "RX 580"})
	for _, tc := range []struct {
		name string
		env  map[string]string
		want int // the host's KFD node of the one device seen; -1 for none
	}{
		{name: "ROCr: only by index", env: map[string]string{EnvROCR: "4"}, want: 7},
		{name: "ROCr: GPU-XX never matches", env: map[string]string{EnvROCR: "GPU-XX"}, want: -1},
		{name: "HIP: GPU-XX is the first GPU without a UUID", env: map[string]string{EnvHIP: "GPU-XX"}, want: 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rocr, hip := LookupROCm(mapEnv(tc.env))
			entries, err := MapROCm(rocr, hip, host)
			require.NoError(t, err)
			if tc.want < 0 {
				assert.Empty(t, entries)
				return
			}
			require.Len(t, entries, 1)
			assert.Equal(t, tc.want, entries[0].Physical.Index)
		})
	}
}

func TestMapROCmRefuses(t *testing.T) {
	_, err := MapROCm(ParseCUDA("0"), Unset(ROCclr, EnvHIP), amdHost())
	assert.ErrorContains(t, err, "first Spec is ROCr's")
	_, err = MapROCm(Unset(ROCr, EnvROCR), ParseROCm(EnvROCR, "0"), amdHost())
	assert.ErrorContains(t, err, "second Spec is ROCclr's")
	_, err = MapROCm(Spec{}, Spec{}, append(amdHost(), amdHost()[0]))
	assert.ErrorContains(t, err, "two devices have UUID")
}

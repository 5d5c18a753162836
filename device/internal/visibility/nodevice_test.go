package visibility

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestNoDeviceIsDecidedFromTheValueAndTheGPUCount checks NoDevice against the
// runtimes' rules (see ParseCUDA and ParseROCm), and against Map and MapROCm:
// where NoDevice says no device, the maps of every host tried find none.
func TestNoDeviceIsDecidedFromTheValueAndTheGPUCount(t *testing.T) {
	const full = "8932f937-d72c-4106-c12f-20bd9faed9f6"
	cuda := func(v string) Spec { return ParseCUDA(v) }
	rocm := func(name string) func(string) Spec { return func(v string) Spec { return ParseROCm(name, v) } }
	for _, tc := range []struct {
		name  string
		parse func(string) Spec
		value string
		gpus  int
		none  bool
		why   string // a part of the reason, where none
	}{
		// CUDA: what the value alone settles.
		{"CUDA: empty", cuda, "", 0, true, "empty"},
		{"CUDA: -1", cuda, "-1", 0, true, "negative"},
		{"CUDA: -2", cuda, "-2", 0, true, "negative"},
		{"CUDA: a repeat, 0,0", cuda, "0,0", 0, true, "repeats entry 1"},
		{"CUDA: a repeat by value, 1,01", cuda, "1,01", 0, true, "repeats"},
		{"CUDA: a name, gpu0", cuda, "gpu0", 0, true, "not a number"},
		{"CUDA: Slurm's NoDevFiles", cuda, "NoDevFiles", 0, true, "not a number"},
		{"CUDA: void", cuda, "void", 0, true, "not a number"},
		{"CUDA: a repeated UUID", cuda, "GPU-" + full + ",GPU-" + full, 0, true, "repeats"},
		// CUDA: what the first entry's form settles.
		{"CUDA: GPU- and no hex", cuda, "GPU-zz", 0, true, "start of no device's UUID"},
		{"CUDA: GPU- and a UUID too long", cuda, "GPU-" + full + "0", 0, true, "start of no device's UUID"},
		{"CUDA: GPU- with a dash out of place", cuda, "GPU-8932-f937", 0, true, "start of no device's UUID"},
		{"CUDA: MIG- and a word", cuda, "MIG-unknown", 0, true, "start of no device's UUID"},
		{"CUDA: MIG-GPU- and no hex", cuda, "MIG-GPU-zz", 0, true, "start of no device's UUID"},
		{"CUDA: a MIG instance of a parent no GPU can be", cuda, "MIG-GPU-zz/1/0", 0, true, "no NVIDIA GPU can have"},
		// CUDA: the count of GPUs.
		{"CUDA: GPU- on a host of two GPUs", cuda, "GPU-", 2, true, "ambiguous"},
		{"CUDA: GPU- on a host of one GPU names it", cuda, "GPU-", 1, false, ""},
		{"CUDA: GPU- on a host of unknown GPUs", cuda, "GPU-", 0, false, ""},
		// CUDA: what only the devices settle.
		{"CUDA: an index", cuda, "0", 2, false, ""},
		{"CUDA: an index past a host's GPUs may be a MIG device", cuda, "5", 1, false, ""},
		{"CUDA: a UUID prefix", cuda, "GPU-8932f937", 2, false, ""},
		{"CUDA: a UUID in upper case (case-blindness unconfirmed)", cuda, "GPU-8932F937", 2, false, ""},
		{"CUDA: a MIG UUID unknown here", cuda, "MIG-c6d4f1ef-42e4-5de3-91c7-45d71c87eb3f", 2, false, ""},
		{"CUDA: a pre-R470 MIG name", cuda, "MIG-GPU-" + full + "/1/0", 2, false, ""},
		{"CUDA: a later entry that names nothing", cuda, "0,GPU-zz", 2, false, ""},
		// ROCr.
		{"ROCr: empty", rocm(EnvROCR), "", 0, true, "empty"},
		{"ROCr: -2", rocm(EnvROCR), "-2", 0, true, "negative"},
		{"ROCr: a name, gpu0", rocm(EnvROCR), "gpu0", 0, true, "5 to 20"},
		{"ROCr: GPU- alone", rocm(EnvROCR), "GPU-", 0, true, "5 to 20"},
		{"ROCr: an empty first entry fails hsa_init", rocm(EnvROCR), ",0", 0, true, "hsa_init fails"},
		{"ROCr: GPU- and no hex", rocm(EnvROCR), "GPU-zz", 0, true, "start of no device's UUID"},
		{"ROCr: a word starting G", rocm(EnvROCR), "garbage", 0, true, "start of no device's UUID"},
		{"ROCr: GPU-XX is no device's UUID to ROCr", rocm(EnvROCR), "GPU-XX", 0, true, "start of no device's UUID"},
		{"ROCr: a repeat stands", rocm(EnvROCR), "0,0", 2, false, ""},
		{"ROCr: a UUID prefix, any case", rocm(EnvROCR), "gpu-4c2a", 2, false, ""},
		{"ROCr: an empty later entry", rocm(EnvROCR), "0,,1", 2, false, ""},
		// ROCclr, for HIP_VISIBLE_DEVICES and CUDA_VISIBLE_DEVICES as HIP reads it.
		{"HIP: empty", rocm(EnvHIP), "", 0, true, "empty"},
		{"HIP: -1", rocm(EnvHIP), "-1", 0, true, "not a plain decimal"},
		{"HIP: -2", rocm(EnvHIP), "-2", 0, true, "not a plain decimal"},
		{"HIP: gpu0", rocm(EnvHIP), "gpu0", 0, true, "not a plain decimal"},
		{"HIP: a blank before the index", rocm(EnvHIP), " 0", 0, true, "not a plain decimal"},
		{"HIP: GPU- and no hex", rocm(EnvHIP), "GPU-zz", 0, true, "start of no device's UUID"},
		{"HIP: GPU- and upper-case hex, which ROCclr does not match", rocm(EnvHIP), "GPU-4C2A", 0, true, "start of no device's UUID"},
		{"HIP: GPU- is in every UUID: the first GPU", rocm(EnvHIP), "GPU-", 2, false, ""},
		{"HIP: a repeat is skipped", rocm(EnvHIP), "0,0", 2, false, ""},
		{"HIP: GPU-XX names a GPU without a unique id", rocm(EnvHIP), "GPU-XX", 2, false, ""},
		{"CUDA_VISIBLE_DEVICES as HIP reads it: -2", rocm(EnvCUDA), "-2", 0, true, "not a plain decimal"},
		{"CUDA_VISIBLE_DEVICES as HIP reads it: 0,0", rocm(EnvCUDA), "0,0", 2, false, ""},
		{"HIP: a quoted empty value is unset", rocm(EnvHIP), `""`, 0, false, ""},
		{"GPU_DEVICE_ORDINAL: -1, as ROCclr reads it for OpenCL", rocm(EnvOpenCL), "-1", 0, true, "not a plain decimal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.parse(tc.value)
			none, why := s.NoDevice(tc.gpus)
			assert.Equal(t, tc.none, none, "%q: %s", tc.value, why)
			if tc.none {
				assert.Contains(t, why, tc.why)
				assertMapsFindNone(t, s, tc.gpus)
			} else {
				assert.Empty(t, why)
			}
		})
	}
}

// assertMapsFindNone checks that s maps to no device on hosts of gpus GPUs
// (two where gpus is 0) whose UUIDs are every form the vendor gives: what
// NoDevice says, the full rules agree with.
func assertMapsFindNone(t *testing.T, s Spec, gpus int) {
	t.Helper()
	if gpus == 0 {
		gpus = 2
	}
	if s.Runtime == CUDA {
		devices := make([]Physical, gpus)
		for i := range devices {
			devices[i] = Physical{UUID: "GPU-8932f937-d72c-4106-c12f-20bd9faed9f" + string(rune('0'+i)), Index: i,
				PCIBusID: "0000:0" + string(rune('1'+i)) + ":00.0"}
		}
		devices[0].MIGEnabled = true
		devices[0].MIG = []MIGDevice{{UUID: "MIG-c6d4f1ef-42e4-5de3-91c7-45d71c87eb3f", GI: 1, CI: 0}}
		for _, rule := range []MIGRule{MIGOneDevice, MIGOnePerInstance} {
			entries, err := rule.Map(s, devices, OrderPCIBusID)
			assert.NoError(t, err)
			assert.Empty(t, entries, "%s under %s", s.Value, rule)
		}
		return
	}
	devices := make([]Physical, gpus)
	for i := range devices {
		devices[i] = Physical{UUID: AMDUUID(0x4c2a0000 + uint64(i)), Index: i + 1}
	}
	devices[len(devices)-1].UUID = AMDUUID(0)
	rocr, hip := Unset(ROCr, EnvROCR), s
	if s.Runtime == ROCr {
		rocr, hip = s, Unset(ROCclr, EnvHIP)
	}
	entries, err := MapROCm(rocr, hip, devices)
	if err == nil {
		assert.Empty(t, entries, "%s=%q", s.Var, s.Value)
	}
}

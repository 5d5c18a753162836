package visibility

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// migHost is MIG.md's host: GPU 0 in MIG mode with three compute
// instances, two in GPU instance 2; GPU 1 whole.
func migHost() []Physical {
	return []Physical{
		{UUID: "GPU-bbbb", PCIBusID: "0000:0b:00.0", Index: 1, Name: "NVIDIA A100-SXM4-80GB"},
		{UUID: "GPU-aaaa", PCIBusID: "0000:07:00.0", Index: 0, Name: "NVIDIA A100-SXM4-80GB", MIGEnabled: true, MIG: []MIGDevice{
			{UUID: "MIG-1111", GI: 1, CI: 0, Profile: "3g.40gb"},
			{UUID: "MIG-2222", GI: 2, CI: 0, Profile: "1c.3g.40gb"},
			{UUID: "MIG-3333", GI: 2, CI: 1, Profile: "1c.3g.40gb"},
		}},
	}
}

// migTable is what CUDA enumerates on migHost under each form of
// CUDA_VISIBLE_DEVICES, before R570 and from R570; MIG.md shows the same
// rows, with their sources.
var migTable = []struct {
	name   string
	value  string // "unset" for no variable
	before []string
	r570   []string
}{
	{name: "unset: the first MIG device, or one per GPU instance and the whole GPUs", value: "unset",
		before: []string{"MIG-1111"}, r570: []string{"MIG-1111", "MIG-2222", "GPU-bbbb"}},
	{name: "the parent GPU's UUID is no device", value: "GPU-aaaa"},
	{name: "a MIG UUID is that MIG device", value: "MIG-2222", before: []string{"MIG-2222"}, r570: []string{"MIG-2222"}},
	{name: "the pre-R470 form names GI and CI", value: "MIG-GPU-aaaa/2/1", before: []string{"MIG-3333"}, r570: []string{"MIG-3333"}},
	{name: "two GPU instances: the first only before R570", value: "MIG-3333,MIG-1111",
		before: []string{"MIG-3333"}, r570: []string{"MIG-3333", "MIG-1111"}},
	{name: "two compute instances of one GPU instance: the first", value: "MIG-2222,MIG-3333",
		before: []string{"MIG-2222"}, r570: []string{"MIG-2222"}},
	{name: "the MIG-enabled GPU's index is no device", value: "0"},
	{name: "the whole GPU's index", value: "1", before: []string{"GPU-bbbb"}, r570: []string{"GPU-bbbb"}},
	{name: "both indices: the whole GPU only", value: "0,1", before: []string{"GPU-bbbb"}, r570: []string{"GPU-bbbb"}},
	{name: "a GPU UUID ends a MIG list", value: "MIG-1111,GPU-bbbb", before: []string{"MIG-1111"}, r570: []string{"MIG-1111"}},
}

func migSpec(value string) Spec {
	if value == "unset" {
		return Unset(CUDA, EnvCUDA)
	}
	return ParseCUDA(value)
}

func TestMIGTable(t *testing.T) {
	for _, row := range migTable {
		t.Run(row.name, func(t *testing.T) {
			for rule, want := range map[MIGRule][]string{MIGOneDevice: row.before, MIGOnePerInstance: row.r570} {
				for _, order := range []string{"", OrderPCIBusID} {
					entries, err := rule.Map(migSpec(row.value), migHost(), order)
					require.NoError(t, err)
					assert.Equal(t, want, uuids(t, entries), "%s, order %q", rule, order)
				}
			}
		})
	}
}

func TestMIGEntriesCarryTheInstance(t *testing.T) {
	entries, err := MIGOnePerInstance.Map(ParseCUDA("MIG-GPU-aaaa/2/1"), migHost(), "")
	require.NoError(t, err)
	require.Len(t, entries, 1)
	e := entries[0]
	require.NotNil(t, e.MIG)
	assert.Equal(t, MIGDevice{UUID: "MIG-3333", GI: 2, CI: 1, Profile: "1c.3g.40gb"}, *e.MIG)
	assert.Equal(t, "GPU-aaaa", e.Physical.UUID, "the parent")
	assert.Equal(t, "0000:07:00.0", e.Physical.PCIBusID)
	assert.Equal(t, "MIG-GPU-aaaa/2/1", e.Why)
	e.MIG.CI = 9
	assert.Equal(t, 1, migHost()[1].MIG[2].CI, "an entry's MIG device is a copy")
}

func TestMIGRuleForDriverBranch(t *testing.T) {
	for driver, want := range map[int]MIGRule{0: MIGOneDevice, 450: MIGOneDevice, 535: MIGOneDevice, 565: MIGOneDevice, 570: MIGOnePerInstance, 580: MIGOnePerInstance} {
		assert.Equal(t, want, MIGRuleFor(driver), driver)
	}
}

func TestMIGOnePerInstanceStopsAt64(t *testing.T) {
	var host []Physical
	for g := range 10 {
		d := Physical{UUID: "GPU-" + string(rune('a'+g)), PCIBusID: "0000:" + string(rune('a'+g)) + "0:00.0", Index: g, MIGEnabled: true}
		for gi := range 7 {
			d.MIG = append(d.MIG, MIGDevice{UUID: "MIG-" + string(rune('a'+g)) + string(rune('0'+gi)), GI: gi + 1})
		}
		host = append(host, d)
	}
	entries, err := MIGOnePerInstance.Map(Unset(CUDA, EnvCUDA), host, "")
	require.NoError(t, err)
	assert.Len(t, entries, 64, "10 GPUs of 7 instances, at most 64 (MIG User Guide)")
	entries, err = MIGOneDevice.Map(Unset(CUDA, EnvCUDA), host, "")
	require.NoError(t, err)
	assert.Equal(t, []string{"MIG-a0"}, uuids(t, entries))
}

func TestMIGWithoutInstancesLeavesOtherGPUs(t *testing.T) {
	host := migHost()
	host[1].MIG = nil // MIG mode on, no instance made yet
	for _, rule := range []MIGRule{MIGOneDevice, MIGOnePerInstance} {
		entries, err := rule.Map(Unset(CUDA, EnvCUDA), host, "")
		require.NoError(t, err)
		assert.Equal(t, []string{"GPU-bbbb"}, uuids(t, entries), rule)
	}
}

// TestMIGmdMatchesMIGTable keeps MIG.md's table and migTable the same rows.
func TestMIGmdMatchesMIGTable(t *testing.T) {
	md, err := os.ReadFile("MIG.md")
	require.NoError(t, err)
	var rows [][3]string
	for line := range strings.Lines(string(md)) {
		cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
		if len(cells) != 4 || strings.HasPrefix(strings.TrimSpace(cells[0]), "---") || strings.Contains(cells[1], "before R570") {
			continue
		}
		var row [3]string
		for i := range row {
			row[i] = strings.Trim(strings.ReplaceAll(strings.TrimSpace(cells[i]), "†", ""), "` ")
		}
		rows = append(rows, row)
	}
	cell := func(uuids []string) string {
		if len(uuids) == 0 {
			return "none"
		}
		return strings.Join(uuids, ", ")
	}
	require.Len(t, rows, len(migTable))
	for i, row := range migTable {
		assert.Equal(t, [3]string{row.value, cell(row.before), cell(row.r570)}, rows[i], "MIG.md row %d", i+1)
	}
}

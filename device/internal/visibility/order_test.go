package visibility

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOrderDiffersFromPCI(t *testing.T) {
	for _, tc := range []struct {
		name  string
		host  []Physical
		value string
		order string
		want  bool
	}{
		{name: "one model in any order is not worth a warning", host: eightGPUs(), value: "7,0"},
		{name: "mixed models in bus order", host: mixedHost(), order: OrderPCIBusID},
		{name: "mixed models reordered by FASTEST_FIRST", host: mixedHost(), want: true},
		{name: "mixed models reordered by the variable", host: mixedHost(), order: OrderPCIBusID, value: "1,0", want: true},
		{name: "one visible card of a mixed host", host: mixedHost(), value: "0"},
		{name: "two of one model on a mixed host", host: mixedHost(), value: "0,1"},
		{name: "MIG devices of one GPU share its bus", host: migHost(), value: "MIG-3333,MIG-1111"},
		{name: "no device", host: mixedHost(), value: "-1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := Unset(CUDA, EnvCUDA)
			if tc.value != "" {
				spec = ParseCUDA(tc.value)
			}
			entries, err := MIGOnePerInstance.Map(spec, tc.host, tc.order)
			require.NoError(t, err)
			assert.Equal(t, tc.want, OrderDiffersFromPCI(entries))
		})
	}
}

func TestComparePCIReadsEveryForm(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b string
		want int
	}{
		{name: "NVML's eight-digit domain equals sysfs's four", a: "00000000:07:00.0", b: "0000:07:00.0"},
		{name: "case does not matter", a: "0000:0A:00.0", b: "0000:0a:00.0"},
		{name: "bus numbers compare as hex", a: "0000:09:00.0", b: "0000:0a:00.0", want: -1},
		{name: "the domain comes first", a: "0001:01:00.0", b: "0000:ff:00.0", want: 1},
		{name: "a missing domain is 0", a: "07:00.0", b: "0000:07:00.0"},
		{name: "the function counts", a: "0000:07:00.1", b: "0000:07:00.0", want: 1},
		{name: "an id that does not parse sorts last", a: "bogus", b: "ffff:ff:1f.7", want: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, comparePCI(tc.a, tc.b))
		})
	}
}

package preflight

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// FuzzReadReport feeds the parent's reader what a child may write on file
// descriptor 3: any bytes. It never panics, and a report it accepts is one
// that the child's writer writes again as the same report. An error in it
// rebuilds without a panic.
//
//	go test -run '^$' -fuzz '^FuzzReadReport$' -fuzztime 2m ./device/internal/preflight
func FuzzReadReport(f *testing.F) {
	for _, seed := range []string{
		`{"schema":"gpuinit-preflight/v1","backend":"cuda","driver_version":12040,"devices":["NVIDIA H200","NVIDIA H200"]}`,
		`{"schema":"gpuinit-preflight/v1","backend":"cuda","error":{"message":"cuInit: 802","sentinel":"not-ready","driver":true,` +
			`"backend":"cuda","op":"cuInit","code":802,"name":"CUDA_ERROR_SYSTEM_NOT_READY","hint":"start it","sticky":false}}`,
		`{"schema":"gpuinit-preflight/v1","backend":"sim","error":{"message":"plain","sentinel":"no-such-kind"}}`,
		`{"schema":"gpuinit-preflight/v0"}`,
		`{"schema":"gpuinit-preflight/v1","devices":[]}`,
		`{"schema":"gpuinit-preflight/v1","backend":"\u00e9\ud800"}`,
		`{"schema":"gpuinit-preflight/v1"} trailing`,
		`[1,2]`, `null`, ``, `{`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		rep, err := readReport(bytes.NewReader(data), maxReport)
		if err != nil {
			return
		}
		if rep.Error != nil {
			_ = rep.Error.Rebuild().Error()
		}
		assertWrittenReadsBack(t, rep)
	})
}

// FuzzReportRoundTrip builds a report from any fields: what the child's
// writer writes, the parent's reader reads as the same report. Only strings
// that are not valid UTF-8 change, each invalid byte to U+FFFD, as JSON
// carries them.
func FuzzReportRoundTrip(f *testing.F) {
	f.Add("cuda", 12040, "NVIDIA H200\x00second", "cuInit: 802", "not-ready", "cuInit", 802, "CUDA_ERROR_SYSTEM_NOT_READY", true)
	f.Add("sim", 0, "", "", "", "", 0, "", false)
	f.Add("\xff\xfe", -1, "a\u2028b\x7f", "<&>\"\\", "\xc3", "op", -999, "\ufffd", true)
	f.Fuzz(func(t *testing.T, backend string, version int, devices, message, kind, op string, code int, name string, failed bool) {
		rep := NewReport(backend)
		rep.DriverVersion = version
		if devices != "" {
			rep.Devices = strings.Split(devices, "\x00")
		}
		if failed {
			rep.Error = &ReportedError{Message: message, Kind: kind, Driver: op != "", Backend: backend, Op: op, Code: code,
				Name: name, Hint: message, Text: name, Detail: devices, Sticky: code%2 == 0}
		}
		var buf bytes.Buffer
		require.NoError(t, writeReport(&buf, rep))
		got, err := readReport(&buf, maxReport)
		require.NoError(t, err, "%s", buf.String())
		assert.Equal(t, asJSONCarriesIt(rep), got)
	})
}

// assertWrittenReadsBack checks that rep, written as a child writes it,
// reads back as rep.
func assertWrittenReadsBack(t *testing.T, rep Report) {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, writeReport(&buf, rep))
	back, err := readReport(&buf, maxReport)
	require.NoError(t, err, "%s", buf.String())
	assert.Equal(t, rep, back)
}

// asJSONCarriesIt is rep as it arrives through JSON: each string's invalid
// UTF-8 bytes replaced by U+FFFD.
func asJSONCarriesIt(rep Report) Report {
	valid := func(s string) string {
		var b strings.Builder
		for _, r := range s {
			b.WriteRune(r) // ranging over a string yields U+FFFD for each invalid byte
		}
		return b.String()
	}
	rep.Schema, rep.Backend = valid(rep.Schema), valid(rep.Backend)
	if rep.Devices != nil {
		devices := make([]string, len(rep.Devices))
		for i, d := range rep.Devices {
			devices[i] = valid(d)
		}
		rep.Devices = devices
	}
	if rep.Error != nil {
		e := *rep.Error
		e.Message, e.Kind, e.Backend, e.Op, e.Name, e.Hint, e.Text, e.Detail =
			valid(e.Message), valid(e.Kind), valid(e.Backend), valid(e.Op), valid(e.Name), valid(e.Hint), valid(e.Text), valid(e.Detail)
		rep.Error = &e
	}
	return rep
}

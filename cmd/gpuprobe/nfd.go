package main

import (
	"bytes"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"
)

// The Node Feature Discovery feature file: NFD's local source reads each
// name=value line of a file in its features.d as a node label, and a
// "# +expiry-time=" comment as when the labels stop holding.

// labelPrefix is the prefix of every node label gpuprobe publishes.
const labelPrefix = "gpuinit.io/"

// notInLabels matches what a Kubernetes label value may not hold.
var notInLabels = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// labelValue makes s a valid Kubernetes label value: at most 63 characters of
// [A-Za-z0-9_.-], starting and ending with an alphanumeric.
func labelValue(s string) string {
	s = notInLabels.ReplaceAllString(s, "_")
	if len(s) > 63 {
		s = s[:63]
	}
	return strings.Trim(s, "_.-")
}

// maxLabelName is the most characters of a label key's name, the part after
// its prefix (gpuinit.io/): Kubernetes' qualified names allow 63.
const maxLabelName = 63

// labelName makes prefix+s the name of a label key, for a name made of
// what the driver says (an arch, a MIG profile): s as labelValue makes it,
// cut so that room more characters (a suffix) still fit. ok is false where
// nothing of s is left: no label is then better than a bad one.
func labelName(prefix, s string, room int) (name string, ok bool) {
	v := labelValue(s)
	if fit := maxLabelName - len(prefix) - room; len(v) > fit {
		v = strings.TrimRight(v[:max(fit, 0)], "_.-")
	}
	return prefix + v, v != ""
}

// nfdFeatures renders the NFD feature file: an expiry directive, so that a
// node whose probe stopped running loses its labels, then one name=value line
// per label.
func nfdFeatures(r report, now time.Time, ttl time.Duration) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# gpuinit's gpuprobe, %s; labels expire unless it runs again\n", now.UTC().Format(time.RFC3339))
	fmt.Fprintf(&b, "# +expiry-time=%s\n", now.Add(ttl).UTC().Format(time.RFC3339))
	label := func(name, value string) { fmt.Fprintf(&b, "%s%s=%s\n", labelPrefix, name, labelValue(value)) }
	label("probe", r.verdict())
	if r.noGPU() {
		// What sim found says nothing of this node: a device or arch label
		// would put GPU pods on it. The verdict and its reason only.
		if reason := r.noGPUReason(); reason != "" {
			label("reason", reason)
		}
		return b.Bytes()
	}
	label("backend", r.Backend)
	if r.DriverVersion != 0 {
		label("driver-version", fmt.Sprint(r.DriverVersion))
	}
	label("devices", fmt.Sprint(len(r.Devices)))
	if h := worstVerdict(r.Devices); h != "" {
		label("health", h)
	}
	// By the labels' names: two archs a label says alike are one label.
	var archs []string
	for _, d := range r.Devices {
		if name, ok := labelName("arch.", d.Arch, 0); ok && !slices.Contains(archs, name) {
			archs = append(archs, name)
		}
	}
	slices.Sort(archs)
	for _, name := range archs {
		label(name, "true")
	}
	if r.RNG != nil {
		label("rng", r.RNG.Verdict)
	}
	migLabels(label, r.Devices)
	return b.Bytes()
}

// migLabels labels each MIG profile among the devices with its instances'
// count, memory (MiB) and multiprocessors, under the suffixes NVIDIA's GPU
// Feature Discovery uses (nvidia.com/mig-1g.10gb.count becomes
// gpuinit.io/mig-1g.10gb.count), so that a rule written for one reads the
// other. An instance whose profile NVML does not say is left out.
func migLabels(label func(name, value string), devices []deviceInfo) {
	type profile struct {
		count           int
		memory          uint64 // MiB
		multiprocessors int
	}
	// By the labels' name, so that two profiles that name alike (their
	// characters a label cannot hold differ) make one label each, not two.
	profiles := map[string]*profile{}
	for _, d := range devices {
		if d.MIG == nil {
			continue
		}
		name, ok := labelName("mig-", d.MIG.Profile, len(".multiprocessors"))
		if !ok {
			continue
		}
		p := profiles[name]
		if p == nil {
			p = &profile{memory: d.TotalMemory >> 20, multiprocessors: d.Multiprocessors}
			profiles[name] = p
		}
		p.count++
	}
	for _, name := range slices.Sorted(maps.Keys(profiles)) {
		p := profiles[name]
		label(name+".count", fmt.Sprint(p.count))
		label(name+".memory", fmt.Sprint(p.memory))
		label(name+".multiprocessors", fmt.Sprint(p.multiprocessors))
	}
}

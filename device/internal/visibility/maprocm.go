package visibility

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrInitFails is MapROCm's answer when the value makes the runtime's own
// initialisation fail, so that it sees no device at all: ROCr reaching an
// empty ROCR_VISIBLE_DEVICES entry.
var ErrInitFails = errors.New("the runtime's initialisation fails on this value")

// MapROCm returns, for each HIP (or OpenCL) ordinal on AMD, the device it is:
// ROCr's Spec filters the GPUs first, numbered in ascending KFD node id
// (Physical.Index), then ROCclr's Spec (HIP_VISIBLE_DEVICES or what
// LookupROCm chose) indexes what ROCr left. See ParseROCm for the rules of
// each. An entry's Var and Why are those of the last variable set. The
// result is nil, with no error, when the runtime sees no device.
func MapROCm(rocr, hip Spec, devices []Physical) ([]Entry, error) {
	if rocr.Set && rocr.Runtime != ROCr {
		return nil, fmt.Errorf("visibility: MapROCm's first Spec is ROCr's, not %s's %s", rocr.Runtime, rocr.Var)
	}
	if hip.Set && hip.Runtime != ROCclr {
		return nil, fmt.Errorf("visibility: MapROCm's second Spec is ROCclr's, not %s's %s", hip.Runtime, hip.Var)
	}
	if err := checkDevices(devices); err != nil {
		return nil, err
	}
	gpus := slices.Clone(devices)
	slices.SortStableFunc(gpus, func(a, b Physical) int { return cmp.Compare(a.Index, b.Index) })
	left, err := applyROCr(rocr, gpus)
	if err != nil {
		return nil, err
	}
	out := applyROCclr(hip, left)
	for i := range out {
		out[i].Ordinal = i
	}
	return out, nil
}

// applyROCr is RvdFilter::BuildUsrDeviceList.
func applyROCr(s Spec, gpus []Physical) ([]Entry, error) {
	var out []Entry
	if !s.Set {
		for _, g := range gpus {
			out = append(out, Entry{Physical: g})
		}
		return out, nil
	}
	uuids := make([]string, len(gpus))
	for i, g := range gpus {
		uuids[i] = strings.ToUpper(g.UUID)
		if g.UUID == "" || g.UUID == AMDUUID(0) {
			uuids[i] = "Invalid-UUID" // BuildDeviceUuidList: never matches
		}
	}
	chosen := map[int]bool{}
	// ROCr reads min(GPUs, entries) entries.
	for i := 0; i < len(gpus); i++ {
		if i == s.throwAt-1 {
			return nil, fmt.Errorf("visibility: %s entry %d is empty, and ROCr throws on it: %w", s.Var, i+1, ErrInitFails)
		}
		if i >= len(s.Selectors) {
			break
		}
		sel := s.Selectors[i]
		idx := sel.Index
		if sel.Kind == GPUUUID {
			idx = -1
			for g, u := range uuids {
				if strings.HasPrefix(u, sel.UUID) {
					if idx >= 0 {
						idx = -1 // two devices: terminating
						break
					}
					idx = g
				}
			}
		}
		if idx < 0 || idx >= len(gpus) || chosen[idx] {
			break // out of range, no match or two, or seen: each ends the list
		}
		chosen[idx] = true
		out = append(out, Entry{Physical: gpus[idx], Var: s.Var, Why: sel.Text})
	}
	return out, nil
}

// applyROCclr is the HIP_VISIBLE_DEVICES loop of ROCclr's Device::init over
// the GPUs ROCr surfaced.
func applyROCclr(s Spec, left []Entry) []Entry {
	if !s.Set {
		return left
	}
	var out []Entry
	chosen := map[int]bool{}
	for _, sel := range s.Selectors {
		idx := sel.Index
		if sel.Kind == GPUUUID {
			idx = slices.IndexFunc(left, func(e Entry) bool {
				return strings.Contains(e.Physical.UUID, sel.UUID) // the first that contains it
			})
		}
		if idx < 0 || idx >= len(left) {
			break // "anything to the right of invalid deviceId has to be discarded"
		}
		if chosen[idx] {
			continue // a repeated index is skipped
		}
		chosen[idx] = true
		e := left[idx]
		e.Var, e.Why = s.Var, sel.Text
		out = append(out, e)
	}
	return out
}

package lockedcall

import (
	"cmp"
	"slices"
	"sort"
)

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// inIndexOrder returns the keys of m, one of the index's maps, in the order
// the index's scan first met them: the package's functions in source order,
// their instructions in order. The analysis memoizes answers to questions
// that depend on each other, so the order in which it asks them must be the
// same in every run, as a map's is not; positions would not do, since a
// driver that parses a package's files in parallel numbers them in any order.
func inIndexOrder[K comparable, V any](ix *storeIndex, m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b K) int { return cmp.Compare(ix.seen[a], ix.seen[b]) })
	return keys
}

// note numbers k, a key of one of the index's maps, if it is new.
func (ix *storeIndex) note(k any) {
	if _, ok := ix.seen[k]; !ok {
		ix.seen[k] = len(ix.seen)
	}
}

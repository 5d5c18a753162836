package lockedcall

import (
	"cmp"
	"go/token"
	"slices"
	"sort"
	"strings"
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

// inSourceOrder returns the keys of m (functions, variables, fields; any
// value with a position) by position, then by name: an order that is the
// same in every run, as a map's is not. The analysis memoizes answers to
// questions that depend on each other, so the order in which it asks them
// must not change from run to run, or neither would its facts.
func inSourceOrder[K comparable, V any](m map[K]V) []K {
	type positioned interface {
		Pos() token.Pos
		String() string
	}
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b K) int {
		pa, _ := any(a).(positioned)
		pb, _ := any(b).(positioned)
		if pa == nil || pb == nil {
			return 0
		}
		if c := cmp.Compare(pa.Pos(), pb.Pos()); c != 0 {
			return c
		}
		return strings.Compare(pa.String(), pb.String())
	})
	return keys
}

package lockedcall

import (
	"math"
	"slices"

	"golang.org/x/tools/go/ssa"
)

// Summaries of recursive functions. A function's summary is built from the
// summaries of the functions it calls, so in a cycle of calls (a → b → a, or
// a function that calls itself) some summary is asked for while it is still
// being built. It is answered with what is known so far (nothing, the first
// time), and the functions of the cycle are summarized again, in rounds,
// until no summary of the cycle changes: then each is what the whole cycle
// calls. A summary that did not use one still being built is final at once.
//
// Cycles are found as Tarjan's algorithm finds strongly connected
// components: each summary being built has a number, in the order they were
// started, and a computation notes the least number of an unfinished summary
// it used. A summary that used only its own, or later ones, is the first of
// its cycle: it runs the rounds, and when they are over makes the summaries
// of the cycle, computed in its last round, final. Within a round each
// summary of the cycle is computed once, so a round costs what summarizing
// the cycle's functions once costs, and there are at most maxCycleRounds.
// Memoized closure summaries take part the same way.

// maxCycleRounds bounds how many times a cycle of functions is summarized: a
// summary that keeps growing (a walk down x.next, x.next.next, ...) stops at
// what that round found.
const maxCycleRounds = 8

// noLow is the low of a computation that used no unfinished summary.
const noLow = math.MaxInt

// closureKey names a memoized closure summary among the functions' ones.
type closureKey struct{ fn *ssa.Function }

// cycleState is the state of the summaries being built.
type cycleState struct {
	busy  map[any]int // summaries being computed, by number
	next  int         // the next number
	low   int         // the least number of an unfinished summary the computation under way used
	round int         // the round under way of the innermost cycle being summarized again; 0 for none
	// rounds counts the rounds started, for unique round numbers.
	rounds int
	// changed is true when a summary of the cycle computed in this round
	// differs from the one before it.
	changed bool
	// unfinished are the summaries computed but not final: in a cycle whose
	// first summary is still being built.
	unfinished map[any]unfinished
	pending    []any // their keys, in the order computed, for the first to finish them
}

type unfinished struct {
	calls []outCall
	low   int // the least number of an unfinished summary it used
	round int // the round it was computed in
	save  func([]outCall)
}

// cycleSummary returns the summary of key, computing it with compute and
// handing the final one to save, or what is known of it while it is being
// built.
func (c *checker) cycleSummary(key any, compute func() []outCall, save func([]outCall)) []outCall {
	st := &c.cycles
	if st.busy == nil {
		st.busy, st.unfinished = map[any]int{}, map[any]unfinished{}
	}
	if i, ok := st.busy[key]; ok {
		st.use(i)
		return st.unfinished[key].calls // what the round before found, or nothing
	}
	if u, ok := st.unfinished[key]; ok && u.round == st.round {
		st.use(u.low) // computed in this round already
		return u.calls
	}
	i := st.next
	st.next++
	st.busy[key] = i
	outerLow, outerRound, outerChanged := st.low, st.round, st.changed
	mark := len(st.pending)
	defer delete(st.busy, key)
	for rounds := 1; ; rounds++ {
		st.low, st.changed = noLow, false
		s := compute()
		low := st.low
		prev, had := st.unfinished[key]
		if had {
			s = keepEarlier(prev.calls, s)
		}
		changed := st.changed || !sameCalls(prev.calls, s)
		switch {
		case low < i:
			// In a cycle through a summary started before this one, which
			// finishes both.
			st.unfinished[key] = unfinished{calls: s, low: low, round: st.round, save: save}
			st.pending = append(st.pending, key)
			st.low, st.changed = min(outerLow, low), outerChanged || changed
			return s
		case low != noLow && changed && rounds < maxCycleRounds:
			// The first of a cycle: summarize the cycle again, with what
			// this round found.
			st.unfinished[key] = unfinished{calls: s, low: i, round: st.round, save: save}
			st.rounds++
			st.round = st.rounds
			continue
		}
		// Done; in a cycle, its summaries of the last round are final.
		for _, k := range st.pending[mark:] {
			if u, ok := st.unfinished[k]; ok {
				if u.round == st.round {
					u.save(u.calls)
				}
				delete(st.unfinished, k)
			}
		}
		st.pending = st.pending[:mark]
		if had {
			delete(st.unfinished, key)
		}
		save(s)
		st.low, st.round, st.changed = outerLow, outerRound, outerChanged
		return s
	}
}

// use notes that the computation under way used an unfinished summary, whose
// cycle's first has number low.
func (st *cycleState) use(low int) {
	st.low = min(st.low, low)
}

// keepEarlier merges a round's summary s into the one before it, prev: what
// an earlier round found stays first, as that round found it (the way once
// more around the cycle names a longer chain to the same code), and a call
// that is one of prev's only further down a structure the cycle walks (the
// field loader of n, of n.inst.orig, of n.inst.orig.inst.orig, ...) adds
// nothing: the first names what the call runs. The summary stays capped.
func keepEarlier(prev, s []outCall) []outCall {
	if len(prev) == 0 {
		return s
	}
	out := slices.Clone(prev)
	seen := make(map[string]bool, len(prev))
	for _, o := range prev {
		seen[o.key()] = true
	}
	for _, o := range s {
		if len(out) >= maxOutCalls {
			break
		}
		if seen[o.key()] || slices.ContainsFunc(prev, o.deeperThan) {
			continue
		}
		seen[o.key()] = true
		out = append(out, o)
	}
	return out
}

// deeperThan reports whether o calls what e calls, reached from the same
// parameter through more fields: the steps of e are a proper suffix of o's.
func (o outCall) deeperThan(e outCall) bool {
	return o.param == e.param && len(e.steps) > 0 && len(o.steps) > len(e.steps) &&
		slices.Equal(o.steps[len(o.steps)-len(e.steps):], e.steps)
}

// sameCalls reports whether two summaries say the same.
func sameCalls(a, b []outCall) bool {
	return slices.EqualFunc(a, b, func(x, y outCall) bool {
		return x.param == y.param && x.out == y.out && x.text == y.text &&
			slices.Equal(x.steps, y.steps) && slices.Equal(x.chain, y.chain)
	})
}

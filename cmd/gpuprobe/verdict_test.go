package main

import (
	"testing"
	"time"

	"github.com/gpuinit/gpuinit/internal/hangcheck"
	"github.com/stretchr/testify/assert"
)

func TestVerdictNamesTheWorstOutcome(t *testing.T) {
	hung := scenarioResult{Verdict: string(hangcheck.Hang)}
	failed := scenarioResult{Verdict: string(hangcheck.Error)}
	for _, tc := range []struct {
		name string
		r    report
		want string
	}{
		{"every check passed", report{ExitCode: exitOK}, "ok"},
		{"no GPU backend", report{ExitCode: exitUnavailable, Class: "no-gpu"}, "no-gpu"},
		{"no GPU backend, class unknown", report{ExitCode: exitUnavailable}, "no-gpu"},
		{"fell back to sim, though sim passed", report{ExitCode: exitOK, Fallback: &fallback{}, Class: "no-gpu"}, "no-gpu"},
		{"a GPU not ready yet", report{ExitCode: exitUnavailable, Class: "not-yet"}, "not-yet"},
		{"a GPU that needs an operator", report{ExitCode: exitUnavailable, Class: "needs-operator"}, "needs-operator"},
		{"init hung in its preflight child", report{ExitCode: exitFailed, Class: "not-yet", Error: &errorInfo{Kind: string(hangcheck.Hang)}}, "hang"},
		{"init hung", report{ExitCode: exitFailed, Error: &errorInfo{Kind: string(hangcheck.Hang)}}, "hang"},
		{"a scenario hung, another failed", report{ExitCode: exitFailed, Scenarios: []scenarioResult{failed, hung}}, "hang"},
		{"a scenario failed", report{ExitCode: exitFailed, Scenarios: []scenarioResult{failed}}, "failed"},
		{"init failed", report{ExitCode: exitFailed, Error: &errorInfo{Kind: "no-device"}}, "failed"},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, tc.r.verdict()) })
	}
}

func TestARoundIsBoundedByInitAndItsScenarioBatches(t *testing.T) {
	const timeout = 10 * time.Second
	for _, tc := range []struct {
		scenarios int
		want      time.Duration
	}{
		{1, 2*timeout + time.Minute},
		{parallelChildren, 2*timeout + time.Minute},
		{parallelChildren + 1, 3*timeout + time.Minute},
	} {
		assert.Equal(t, tc.want, roundLimit(timeout, tc.scenarios), "%d scenarios", tc.scenarios)
	}
}

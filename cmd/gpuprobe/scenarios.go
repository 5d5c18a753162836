package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/gpuinit/gpuinit/device"
	"github.com/gpuinit/gpuinit/rng"
)

// A scenario is one re-entrant path, run in a child process. It gets a fresh
// runtime in the discipline under test and returns an error if the outcome is
// wrong; a deadlock shows as the child never exiting.
type scenario struct {
	name string
	what string
	run  func(ctx context.Context, rt rng.Runtime, g *rng.Generators) error
}

// passOn is the context a callback hands to its re-entrant call: its own, or a
// foreign one (what code that ignores the ctx it was given does).
func passOn(ctx context.Context, propagate bool) context.Context {
	if propagate {
		return ctx
	}
	return context.Background()
}

func scenarios() []scenario {
	var list []scenario
	for _, propagate := range []bool{true, false} {
		how := map[bool]string{true: "ctx", false: "background"}[propagate]
		list = append(list,
			scenario{
				name: "initialized/" + how,
				what: "init; read device 0's RNG state; LazyCall a callback that calls SetState with it (" + how + ")",
				run: func(ctx context.Context, rt rng.Runtime, g *rng.Generators) error {
					if err := rt.Init(ctx); err != nil {
						return err
					}
					state, err := g.State(ctx, 0)
					if err != nil {
						return err
					}
					return rt.LazyCallDepth(ctx, 0, func(ctx context.Context) error {
						return g.SetState(passOn(ctx, propagate), 0, state)
					})
				},
			},
			scenario{
				name: "queued/" + how,
				what: "before init, LazyCall a callback that calls ManualSeed(0, 42) (" + how + "); then init, whose drain re-enters",
				run: func(ctx context.Context, rt rng.Runtime, g *rng.Generators) error {
					if err := rt.LazyCallDepth(ctx, 0, func(ctx context.Context) error {
						return g.ManualSeed(passOn(ctx, propagate), 0, 42)
					}); err != nil {
						return err
					}
					if err := rt.Init(ctx); err != nil {
						return err
					}
					if seed, err := g.InitialSeed(ctx, 0); err != nil || seed != 42 {
						return fmt.Errorf("after the drain, device 0's seed is %d (%v), want 42", seed, err)
					}
					return nil
				},
			})
	}
	for _, initialized := range []bool{true, false} {
		where := map[bool]string{true: "initialized", false: "queued"}[initialized]
		list = append(list, scenario{
			name: where + "/init-from-callback",
			what: "a callback calls Init on the runtime that runs it (" + where + ")",
			run: func(ctx context.Context, rt rng.Runtime, g *rng.Generators) error {
				if initialized {
					if err := rt.Init(ctx); err != nil {
						return err
					}
				}
				var inner error = errors.New("callback did not run")
				if err := rt.LazyCallDepth(ctx, 0, func(ctx context.Context) error {
					inner = rt.Init(ctx)
					return inner
				}); err != nil {
					return err
				}
				if err := rt.Init(ctx); err != nil {
					return err
				}
				return inner
			},
		})
	}
	return list
}

// selectScenarios picks by -scenario: all, initialized or queued.
func selectScenarios(which string) ([]scenario, error) {
	var out []scenario
	for _, s := range scenarios() {
		if which == "all" || strings.HasPrefix(s.name, which+"/") {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("unknown -scenario %q: want initialized, queued or all", which)
	}
	return out, nil
}

// The child is this binary, re-executed with these variables set.
const (
	envChildScenario   = "GPUPROBE_CHILD_SCENARIO"
	envChildDiscipline = "GPUPROBE_CHILD_DISCIPLINE"
	envChildBackend    = "GPUPROBE_CHILD_BACKEND"
)

// runChild runs one scenario in this process and exits: 0 and "ok" on stdout,
// or 1 and the error on stderr.
// scenarioArmed is what a scenario's child writes to its stderr as its
// scenario starts: its -timeout counts from there.
const scenarioArmed = "gpuprobe: the scenario starts"

// scenarioStartBound is the least time a scenario's child has to start its
// scenario: its process start and package inits.
const scenarioStartBound = 10 * time.Second

func runChild(name string) {
	// A server has timers and listeners; so does the child, or the Go runtime
	// would turn a deadlock into a crash where a real process hangs.
	heartbeat := time.NewTicker(time.Hour)
	go func() {
		for range heartbeat.C {
		}
	}()
	err := func() error {
		var sc *scenario
		for _, s := range scenarios() {
			if s.name == name {
				sc = &s
			}
		}
		if sc == nil {
			return fmt.Errorf("unknown scenario %q", name)
		}
		rt, err := newRuntime(os.Getenv(envChildBackend), os.Getenv(envChildDiscipline))
		if err != nil {
			return err
		}
		fmt.Fprintln(os.Stderr, scenarioArmed)
		return sc.run(context.Background(), rt, rng.New(rt))
	}()
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
	fmt.Println("ok")
	os.Exit(0)
}

// newRuntime returns the runtime a child runs its scenario on: the process's
// Runtime of backend (the child is a fresh process, so it is uninitialized),
// or, for the legacy discipline, a pre-fix runtime over the same backend.
func newRuntime(backend, discipline string) (rng.Runtime, error) {
	shared, err := device.Open(backend)
	if err != nil {
		return nil, err
	}
	if discipline == "legacy" {
		return newLegacyRuntime(shared.Registration(), shared.Backend()), nil
	}
	return shared, nil
}

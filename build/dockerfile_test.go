package build

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// instruction is one parsed Dockerfile instruction, ARGs expanded.
type instruction struct {
	cmd   string // lower case: from, copy, run, entrypoint, ...
	args  []string
	flags []string
	json  bool
}

// stage is one FROM and what follows it.
type stage struct {
	image string
	name  string
	body  []instruction
}

func parseDockerfile(t *testing.T, path string) []stage {
	t.Helper()
	f, err := os.Open("../" + path)
	require.NoError(t, err)
	defer f.Close()
	res, err := parser.Parse(f)
	require.NoError(t, err, "Docker's parser rejects %s", path)
	args := map[string]string{}
	expand := func(s string) string {
		return regexp.MustCompile(`\$\{?(\w+)\}?`).ReplaceAllStringFunc(s, func(m string) string {
			name := strings.Trim(m, "${}")
			if v, ok := args[name]; ok {
				return v
			}
			return m
		})
	}
	var stages []stage
	for _, n := range res.AST.Children {
		in := instruction{cmd: strings.ToLower(n.Value), flags: n.Flags, json: n.Attributes["json"]}
		for a := n.Next; a != nil; a = a.Next {
			in.args = append(in.args, expand(a.Value))
		}
		switch {
		case in.cmd == "arg" && len(stages) == 0:
			name, value, _ := strings.Cut(in.args[0], "=")
			args[name] = value
		case in.cmd == "from":
			s := stage{image: in.args[0]}
			if len(in.args) == 3 && strings.EqualFold(in.args[1], "as") {
				s.name = in.args[2]
			}
			stages = append(stages, s)
		default:
			require.NotEmpty(t, stages, "%s: %s before any FROM", path, in.cmd)
			stages[len(stages)-1].body = append(stages[len(stages)-1].body, in)
		}
	}
	return stages
}

func find(s stage, cmd string, match func(instruction) bool) bool {
	for _, in := range s.body {
		if in.cmd == cmd && match(in) {
			return true
		}
	}
	return false
}

func TestDockerfilesBuildWithoutSDKsAndCheckTheBinary(t *testing.T) {
	for _, tc := range []struct {
		file, backend, leftOut string
		runtime                *regexp.Regexp
		rngLibraries           func(stage) bool
	}{
		{"Dockerfile.cuda", "cuda", "nohip", regexp.MustCompile(`^nvidia/cuda:12\.\d+(\.\d+)?-runtime-ubuntu22\.04$`),
			func(stage) bool { return true }}, // the CUDA runtime image ships libcurand
		{"Dockerfile.rocm", "hip", "nocuda", regexp.MustCompile(`^rocm/dev-ubuntu-22\.04:6\.\d+(\.\d+)?$`),
			func(s stage) bool {
				return find(s, "run", func(in instruction) bool {
					return strings.Contains(in.args[0], "hiprand") && strings.Contains(in.args[0], "rocrand")
				})
			}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			stages := parseDockerfile(t, tc.file)
			require.Len(t, stages, 2, "a build stage and a runtime stage")
			build, final := stages[0], stages[1]

			assert.Equal(t, "golang:"+goRelease(t)+"-bookworm", build.image, "the build stage is the official golang image (Go and gcc, no SDK), pinned to the release CI runs")
			assert.True(t, find(build, "env", func(in instruction) bool {
				return slices.Contains(in.args, "CGO_ENABLED") || strings.Contains(strings.Join(in.args, " "), "CGO_ENABLED=1")
			}), "cgo is on explicitly: the backends need it")
			assert.False(t, find(build, "env", func(in instruction) bool {
				joined := strings.Join(in.args, " ")
				return strings.Contains(joined, "CGO_LDFLAGS") || strings.Contains(joined, "CGO_CFLAGS")
			}), "no vendor headers or libraries at build time")
			assert.True(t, find(build, "run", func(in instruction) bool {
				return regexp.MustCompile(`go build .*-tags ` + tc.leftOut + ` .*\./cmd/gpuprobe && build/check-gpu-backends\.sh /out/gpuprobe`).MatchString(in.args[0])
			}), "gpuprobe is built, and checked for its GPU backends in the same step, so a cgo-less build fails the image")
			assert.Regexp(t, tc.runtime, final.image)
			assert.True(t, tc.rngLibraries(final), "the runtime stage brings the RNG libraries")
			assert.True(t, find(final, "copy", func(in instruction) bool {
				return len(in.flags) == 1 && in.flags[0] == "--from="+build.name
			}), "the final stage takes the binary from the build stage")
			assert.True(t, find(final, "entrypoint", func(in instruction) bool {
				return in.json && slices.Equal(in.args, []string{"/usr/local/bin/gpuprobe", "-require-gpu", "-backend", tc.backend})
			}), "the entrypoint probes %s and never falls back to sim (exec form)", tc.backend)
		})
	}
}

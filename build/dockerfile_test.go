package build

import (
	"os"
	"regexp"
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

func TestDockerfilesBuildGpuprobeWithTheirTag(t *testing.T) {
	for _, tc := range []struct {
		file, tag, backend string
		buildImage         *regexp.Regexp
	}{
		{"Dockerfile.cuda", "cuda", "cuda", regexp.MustCompile(`^nvidia/cuda:12\.\d+(\.\d+)?-devel-ubuntu22\.04$`)},
		{"Dockerfile.rocm", "hip", "hip", regexp.MustCompile(`^rocm/dev-ubuntu-22\.04:6\.\d+(\.\d+)?$`)},
	} {
		t.Run(tc.file, func(t *testing.T) {
			stages := parseDockerfile(t, tc.file)
			require.Len(t, stages, 3, "go, build and runtime stages")
			goStage, build, final := stages[0], stages[1], stages[2]

			assert.Regexp(t, `^golang:1\.26`, goStage.image, "Go comes from the official golang image")
			assert.Regexp(t, tc.buildImage, build.image)
			assert.True(t, find(build, "copy", func(in instruction) bool {
				return len(in.flags) == 1 && in.flags[0] == "--from="+goStage.name && in.args[0] == "/usr/local/go"
			}), "Go is copied in with COPY --from, not downloaded")
			assert.False(t, find(build, "run", func(in instruction) bool {
				return strings.Contains(in.args[0], "go.dev/dl") || strings.Contains(in.args[0], "golang.org/dl")
			}), "no Go download")
			assert.True(t, find(build, "run", func(in instruction) bool {
				return regexp.MustCompile(`go build .*-tags ` + tc.tag + ` .*\./cmd/gpuprobe`).MatchString(in.args[0])
			}), "gpuprobe is built with -tags %s", tc.tag)
			assert.True(t, find(final, "copy", func(in instruction) bool {
				return len(in.flags) == 1 && in.flags[0] == "--from="+build.name
			}), "the final stage takes the binary from the build stage")
			assert.True(t, find(final, "entrypoint", func(in instruction) bool {
				return in.json && len(in.args) == 3 && strings.HasSuffix(in.args[0], "/gpuprobe") &&
					in.args[1] == "-backend" && in.args[2] == tc.backend
			}), "the entrypoint runs gpuprobe on the %s backend (exec form)", tc.backend)
		})
	}
}

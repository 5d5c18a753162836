package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Exit statuses of a standalone run, as singlechecker's were.
const (
	exitClean    = 0
	exitFailed   = 1 // a package did not load or build
	exitFindings = 3
)

// standalone runs go vet with this executable as the vet tool over the
// package patterns in args, and prints the findings on stdout.
func standalone(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("lockedcall", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print the findings as go vet -json does")
	interfaces := fs.Bool("interfaces", false, "also report interface method calls (ctx.Err(), w.Write) on parameters, fields and package variables made while a mutex is held")
	tags := fs.String("tags", "", "build tags, as for go vet")
	// The usage goes to stdout when asked for (-h), as the answer it is,
	// and to stderr after a flag's error.
	var usage bytes.Buffer
	fs.Usage = func() {
		fs.SetOutput(&usage)
		defer fs.SetOutput(stderr)
		fmt.Fprintf(&usage, "usage: lockedcall [-interfaces] [-json] [-tags list] [packages]\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			stdout.Write(usage.Bytes())
			return exitClean
		}
		stderr.Write(usage.Bytes())
		return exitFailed
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(stderr, "lockedcall:", err)
		return exitFailed
	}
	vetArgs := []string{"vet", "-vettool=" + self, "-json"}
	if *tags != "" {
		vetArgs = append(vetArgs, "-tags="+*tags)
	}
	if *interfaces {
		vetArgs = append(vetArgs, "-interfaces")
	}
	vetArgs = append(vetArgs, fs.Args()...)
	var out bytes.Buffer
	cmd := exec.Command("go", vetArgs...)
	cmd.Stdout, cmd.Stderr = &out, stderr
	runErr := cmd.Run()
	var exit *exec.ExitError
	if runErr != nil && !errors.As(runErr, &exit) {
		fmt.Fprintln(stderr, "lockedcall:", runErr)
		return exitFailed
	}
	if *asJSON {
		stdout.Write(out.Bytes())
		if runErr != nil {
			return exitFailed
		}
		return exitClean
	}
	findings, err := decode(out.Bytes())
	if err != nil {
		fmt.Fprintln(stderr, "lockedcall: reading go vet's output:", err)
		return exitFailed
	}
	cwd, _ := os.Getwd()
	for _, f := range findings {
		fmt.Fprintf(stdout, "%s: %s\n", relative(f.Posn, cwd), f.Message)
	}
	switch {
	case runErr != nil:
		return exitFailed
	case len(findings) > 0:
		return exitFindings
	}
	return exitClean
}

// diagnostic is one finding as go vet -json prints it.
type diagnostic struct {
	Posn    string `json:"posn"`
	Message string `json:"message"`
}

// decode reads go vet -json's stream: one object per package, from package
// ID to analyzer name to a list of diagnostics (or an error).
func decode(data []byte) ([]diagnostic, error) {
	var out []diagnostic
	dec := json.NewDecoder(bytes.NewReader(data))
	for dec.More() {
		var pkgs map[string]map[string]json.RawMessage
		if err := dec.Decode(&pkgs); err != nil {
			return nil, err
		}
		for _, byAnalyzer := range pkgs {
			for _, raw := range byAnalyzer {
				var diags []diagnostic
				if json.Unmarshal(raw, &diags) == nil {
					out = append(out, diags...)
				}
			}
		}
	}
	return out, nil
}

// relative shortens an absolute position below dir, as go vet's text does.
func relative(posn, dir string) string {
	if dir == "" || !filepath.IsAbs(posn) {
		return posn
	}
	if rel, err := filepath.Rel(dir, posn); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return posn
}

package childtest

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Server is a program a test started that said where it listens.
type Server struct {
	URL string    // "http://" and the address the program said
	Cmd *exec.Cmd // the process: the test's cleanup kills it if it still runs
	Log *Log      // what it wrote to stderr after that line, as it comes
}

// StartServer runs bin with args, and env added to this process's, and
// waits until a line of its stderr matches listening, whose first group is
// the address it listens on. It fails t if the program's stderr ends
// without such a line, or has none after 20 s, a bound no loaded machine
// reaches; it kills the program then. The test's cleanup kills the program
// if it still runs, and waits for it. Its stderr is read to the end.
func StartServer(t testing.TB, bin string, env []string, listening *regexp.Regexp, args ...string) Server {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	// A pipe of the test's own, not StderrPipe: cmd.Wait closes that one as
	// soon as the program exits, which can lose the lines it wrote last.
	// This one is read to its end, whoever waits for the program.
	stderr, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = w
	err = cmd.Start()
	w.Close()
	if err != nil {
		stderr.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait(); stderr.Close() })
	log := &Log{grew: make(chan struct{})}
	early := &Log{grew: make(chan struct{})} // the lines before the listening one
	url := make(chan string, 1)
	ended := make(chan struct{}) // stderr ended before a listening line
	go func() {                  // ends with the program's stderr, which the cleanup closes
		sc := bufio.NewScanner(stderr)
		sc.Buffer(nil, 1<<20)
		found := false
		for sc.Scan() {
			line := sc.Text()
			if m := listening.FindStringSubmatch(line); m != nil && !found {
				found = true
				url <- "http://" + m[1]
				continue
			}
			if found {
				log.add(line)
			} else {
				early.add(line)
			}
		}
		_, _ = io.Copy(io.Discard, stderr) // after a line too long: the program must not block on it
		if !found {
			close(ended)
		}
	}()
	timeout := time.NewTimer(startBound)
	defer timeout.Stop()
	select {
	case u := <-url:
		return Server{URL: u, Cmd: cmd, Log: log}
	case <-ended:
		t.Fatalf("%s never said where it listens (no line matched %s); its stderr:\n%s", bin, listening, strings.Join(early.Lines(), "\n"))
	case <-timeout.C:
		_ = cmd.Process.Kill()
		t.Fatalf("%s said nothing that matched %s in %s, and was killed; its stderr so far:\n%s", bin, listening, startBound, strings.Join(early.Lines(), "\n"))
	}
	return Server{}
}

// startBound is how long StartServer waits for the listening line.
var startBound = 20 * time.Second

// Log is the lines a Server wrote to stderr after it said where it
// listens. Its methods are safe for concurrent use.
type Log struct {
	mu    sync.Mutex
	lines []string
	grew  chan struct{} // closed, and replaced, at each line
}

func (l *Log) add(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, line)
	close(l.grew)
	l.grew = make(chan struct{})
}

// Lines returns the lines so far.
func (l *Log) Lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.lines)
}

// WaitFor waits until a line contains s, waking at each new line. It
// fails t after 20 s, a bound no loaded machine reaches.
func (l *Log) WaitFor(t testing.TB, s string) {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		l.mu.Lock()
		found := slices.ContainsFunc(l.lines, func(line string) bool { return strings.Contains(line, s) })
		grew := l.grew
		l.mu.Unlock()
		if found {
			return
		}
		select {
		case <-grew:
		case <-timeout:
			t.Fatalf("the program never logged %q; it logged:\n%s", s, strings.Join(l.Lines(), "\n"))
		}
	}
}

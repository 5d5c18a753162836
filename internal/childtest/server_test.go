package childtest

import (
	"regexp"
	"slices"
	"testing"
)

// TestAServerIsFoundByItsListeningLineAndItsLogFollows: StartServer returns
// at the line that says where the program listens, and the lines after it
// reach the Log, which WaitFor waits on.
func TestAServerIsFoundByItsListeningLineAndItsLogFollows(t *testing.T) {
	script := `echo starting >&2; echo "listening on 127.0.0.1:7" >&2; echo one >&2; echo two >&2; exec sleep 30`
	s := StartServer(t, "/bin/sh", nil, regexp.MustCompile(`listening on (\S+)`), "-c", script)
	if s.URL != "http://127.0.0.1:7" {
		t.Fatalf("URL %q, want http://127.0.0.1:7", s.URL)
	}
	s.Log.WaitFor(t, "two")
	if got := s.Log.Lines(); !slices.Equal(got, []string{"one", "two"}) {
		t.Fatalf("the log holds %q, want the lines after the listening one", got)
	}
}

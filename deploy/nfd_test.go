package deploy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	_ "unsafe" // for go:linkname

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	"sigs.k8s.io/node-feature-discovery/source"
	"sigs.k8s.io/node-feature-discovery/source/local"
)

// gpuprobe's feature file is read here by Node Feature Discovery's own local
// feature source, the code that turns it into node labels in the cluster, and
// not by a parser of ours.

// nfdFeaturesDir is the directory NFD's local source reads: the unexported
// variable featureFilesDir of sigs.k8s.io/node-feature-discovery/source/local.
// NFD fixes it at /etc/kubernetes/node-feature-discovery/features.d/, where
// our DaemonSets mount the host's directory, and neither the source's Config
// (an empty struct) nor a flag changes it; its parser, parseFeatureFile, is
// unexported too. NFD's own tests set the variable, and so do these, by link
// name, so that the exported Discover and GetLabels run just as the worker
// runs them: directory listing, hidden-file and size rules, directives. The
// link name checks nothing: were NFD to rename the variable, this would be a
// variable of our own and NFD would read its fixed directory, which
// TestNFDReadsTheDirectoryGiven catches; were NFD to change its type, nothing
// would, so an upgrade of NFD must check that it is still a string.
//
//go:linkname nfdFeaturesDir sigs.k8s.io/node-feature-discovery/source/local.featureFilesDir
var nfdFeaturesDir string

// nfdLabels runs NFD's local feature source over dir, as the NFD worker runs
// it over features.d, and returns the labels it would publish. NFD skips a
// line or directive it cannot parse with a log line and nothing else, so
// nfdLabels fails t for any error NFD logs.
//
// It sets package state of NFD's and klog's: no test that calls it may run in
// parallel with another.
func nfdLabels(t *testing.T, dir string) map[string]string {
	t.Helper()
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	klog.SetLogger(logger)
	defer klog.ClearLogger()
	saved := nfdFeaturesDir
	nfdFeaturesDir = dir
	defer func() { nfdFeaturesDir = saved }()

	require.NoError(t, source.GetFeatureSource(local.Name).Discover())
	found, err := source.GetLabelSource(local.Name).GetLabels()
	require.NoError(t, err)
	for _, e := range logger.GetSink().(ktesting.Underlier).GetBuffer().Data() {
		assert.NotEqual(t, ktesting.LogError, e.Type, "NFD logged an error: %s: %v %v", e.Message, e.Err, e.ParameterKVList)
	}
	labels := map[string]string{}
	for name, value := range found {
		s, ok := value.(string)
		require.True(t, ok, "NFD's label %s is a %T", name, value)
		labels[name] = s
	}
	return labels
}

// TestNFDReadsTheDirectoryGiven checks nfdLabels itself: NFD reads the
// directory it is given, and skips hidden files there, such as the temporary
// file gpuprobe writes the feature file through.
func TestNFDReadsTheDirectoryGiven(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "gpuinit"), []byte("gpuinit.io/probe=ok\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".gpuinit.123"), []byte("gpuinit.io/probe=torn\n"), 0o644))
	assert.Equal(t, map[string]string{"gpuinit.io/probe": "ok"}, nfdLabels(t, dir),
		"NFD reads %s (is nfdFeaturesDir's link name still NFD's variable?)", dir)
}

// nfdExpiry returns the time of features' expiry directive, parsed as NFD's
// local source parses it, having checked with NFD that the directive is one
// NFD enforces: the same file with only that time moved into the past gives
// no labels. A directive NFD did not recognise (a missing "+", say) would be
// a comment to it, and the labels would never expire.
func nfdExpiry(t *testing.T, features []byte) time.Time {
	t.Helper()
	directive := local.DirectivePrefix + local.DirectiveExpiryTime + "="
	var line string
	for l := range strings.Lines(string(features)) {
		if strings.HasPrefix(l, directive) {
			require.Empty(t, line, "one expiry directive:\n%s", features)
			line = l
		}
	}
	require.NotEmpty(t, line, "an expiry directive, %q:\n%s", directive, features)
	expiry, err := time.Parse(time.RFC3339, strings.TrimSpace(strings.TrimPrefix(line, directive)))
	require.NoError(t, err)

	dir := t.TempDir()
	expired := strings.Replace(string(features), line, directive+time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)+"\n", 1)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "gpuinit"), []byte(expired), 0o644))
	assert.Empty(t, nfdLabels(t, dir), "NFD drops the labels once the directive's time has passed:\n%s", expired)
	return expiry
}

package lockedcall

// SetSummaryFacts turns the export of CallSummary facts on or off, for the
// tests of rules that do not cross packages: analysistest wants every fact
// written out, and the summaries within a package do not need them.
func SetSummaryFacts(on bool) (restore func()) {
	old := summaryFacts
	summaryFacts = on
	return func() { summaryFacts = old }
}

// Package tools holds the project's own measuring tools, in a module of
// their own so that importers of gpuinit inherit nothing of them. See
// counts, which measures the API and the docs the regrouping issue tracks.
package tools

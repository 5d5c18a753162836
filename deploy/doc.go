// Package deploy holds what an operator applies to run gpuprobe across a
// Kubernetes fleet (kubernetes/: a namespace and DaemonSets for NVIDIA and AMD
// nodes), and the tests that check them: every manifest decodes strictly into
// Kubernetes' own types, keeps its invariants (no GPU requested, a tight
// security context, the NFD and node_exporter directories), and gpuprobe's
// labels and metrics pass Kubernetes' label validation and Prometheus's own
// text parser. It is a module of its own, so that Kubernetes' and Prometheus's
// modules never reach the library's importers.
package deploy

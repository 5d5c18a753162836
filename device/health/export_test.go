package health

import "bytes"

// SnapshotAndBody returns a snapshot and the body Status serves for it.
func (h *Health) SnapshotAndBody() (Status, []byte) {
	s, st := h.snapshot()
	var body bytes.Buffer
	h.writeStatus(&body, s, st)
	return s, body.Bytes()
}

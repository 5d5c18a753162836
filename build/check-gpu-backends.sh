#!/usr/bin/env bash
# Fails, loudly, when a gpuprobe (or any Go binary of this module) was built
# without cgo: such a binary has no cuda or hip backend, only sim. Cross builds
# turn cgo off silently, so every image build runs this on what it built.
#   build/check-gpu-backends.sh path/to/gpuprobe
set -euo pipefail
bin=${1:?usage: check-gpu-backends.sh BINARY}
settings=$(go version -m "$bin")
if ! grep -Eq '^[[:space:]]+build[[:space:]]+CGO_ENABLED=1$' <<<"$settings"; then
  echo "check-gpu-backends: $bin was built without cgo, so it has no cuda or hip backend (only sim)." >&2
  echo "check-gpu-backends: build it on Linux with CGO_ENABLED=1 and a C compiler for the target (cross builds turn cgo off)." >&2
  exit 1
fi
for tag in nocuda nohip; do
  if grep -Eq "^[[:space:]]+build[[:space:]]+-tags=.*\b$tag\b" <<<"$settings"; then
    echo "check-gpu-backends: note: $bin was built with -tags $tag" >&2
  fi
done
echo "check-gpu-backends: $bin has its GPU backends (cgo on)" >&2

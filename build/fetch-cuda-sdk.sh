#!/usr/bin/env bash
# Fetches what the cuda backend builds and runs against on a machine with no GPU:
# CUDA 11.8 headers and link stubs (nvidia-cuda-dev), libcurand (libcurand10), the
# driver library (libcuda1) and NVML (libnvidia-ml1), from Debian's non-free component, through a
# private apt configuration: the system's sources are never edited. Only the
# needed paths are extracted, into a cache outside the work tree; a second run
# finds the cache and returns at once.
#
# Prints the environment to build and test with; use it as
#   eval "$(build/fetch-cuda-sdk.sh)"
# Cache: $GPUINIT_SDK_CACHE/cuda (default ~/.cache/gpuinit/cuda). Needs root for
# nothing, apt-get and dpkg-deb only.
set -euo pipefail
cache_root=${GPUINIT_SDK_CACHE:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/gpuinit}
sdk=$cache_root/cuda
stamp=$sdk/.complete
lib=usr/lib/x86_64-linux-gnu

if [[ ! -f $stamp || ! -f $sdk/driver/libnvidia-ml.so.1 ]]; then
  echo "fetching the CUDA SDK into $sdk" >&2
  work=$cache_root/cuda-apt
  rm -rf "$sdk" "$work"
  mkdir -p "$work/lists/partial" "$work/debs" "$sdk"
  # The system's own Debian sources, with contrib and non-free added.
  src=/etc/apt/sources.list.d/debian.sources
  [[ -f $src ]] || { echo "fetch-cuda-sdk: $src not found (a Debian 12 machine is expected)" >&2; exit 1; }
  sed -E 's/^Components:.*/Components: main contrib non-free/' "$src" >"$work/debian.sources"
  apt_opts=(-o "Dir::Etc::SourceList=/dev/null" -o "Dir::Etc::SourceParts=$work/parts"
            -o "Dir::State::Lists=$work/lists" -o "Dir::Cache::Archives=$work/debs"
            -o "APT::Get::List-Cleanup=0" -o "APT::Sandbox::User=root")
  mkdir -p "$work/parts" && cp "$work/debian.sources" "$work/parts/"
  apt-get "${apt_opts[@]}" -qq update >&2
  (cd "$work/debs" && apt-get "${apt_opts[@]}" -qq download nvidia-cuda-dev libcurand10 libcuda1 libnvidia-ml1 >&2)
  for deb in "$work"/debs/nvidia-cuda-dev_*.deb; do
    dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$sdk" ./usr/include "./$lib/stubs/libcuda.so" \
      --wildcards "./$lib/libcurand.so" 2>/dev/null || \
    dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$sdk" ./usr/include "./$lib/stubs/libcuda.so"
  done
  for deb in "$work"/debs/libcurand10_*.deb "$work"/debs/libcuda1_*.deb "$work"/debs/libnvidia-ml1_*.deb; do
    dpkg-deb -x "$deb" "$sdk"
  done
  # The development symlink for -lcurand, if no package shipped one.
  if [[ ! -e $sdk/$lib/libcurand.so ]]; then
    real=$(cd "$sdk/$lib" && ls libcurand.so.* | sort | tail -n1)
    ln -s "$real" "$sdk/$lib/libcurand.so"
  fi
  driver=$(find "$sdk" -name 'libcuda.so.1' -path '*nvidia*' | head -n1)
  [[ -n $driver ]] || { echo "fetch-cuda-sdk: libcuda.so.1 not found in libcuda1" >&2; exit 1; }
  mkdir -p "$sdk/driver" && cp -L "$driver" "$sdk/driver/libcuda.so.1"
  nvml=$(find "$sdk" -name 'libnvidia-ml.so.1' -path '*nvidia*' | head -n1)
  [[ -n $nvml ]] || { echo "fetch-cuda-sdk: libnvidia-ml.so.1 not found in libnvidia-ml1" >&2; exit 1; }
  cp -L "$nvml" "$sdk/driver/libnvidia-ml.so.1"
  [[ -f $sdk/usr/include/cuda.h && -f $sdk/usr/include/curand.h ]] || { echo "fetch-cuda-sdk: headers missing" >&2; exit 1; }
  rm -rf "$work"
  touch "$stamp"
fi

cat <<ENV
export CGO_ENABLED=1
export CGO_CFLAGS="-I$sdk/usr/include"
export CGO_LDFLAGS="-L$sdk/$lib/stubs -L$sdk/$lib"
export LD_LIBRARY_PATH="$sdk/driver:$sdk/$lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
ENV

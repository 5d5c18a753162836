#!/usr/bin/env bash
# Installs what the hip backend builds and runs against: the HIP runtime and
# hipRAND/rocRAND headers and libraries from Debian main (libamdhip64-dev,
# libhiprand-dev, librocrand-dev; about 35 MB). Idempotent: when the packages
# are installed it only prints the environment. Needs root (apt-get install).
#
# Prints the environment to build and test with; use it as
#   eval "$(build/fetch-hip-sdk.sh)"
set -euo pipefail
packages=(libamdhip64-dev libhiprand-dev librocrand-dev)
installed() {
  local p
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || return 1
  done
}
if ! installed; then
  echo "installing ${packages[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get -qq update >&2
  apt-get -qq install -y --no-install-recommends "${packages[@]}" >&2
fi
[[ -f /usr/include/hip/hip_runtime_api.h && -f /usr/include/hiprand/hiprand.h ]] ||
  { echo "fetch-hip-sdk: HIP headers missing after install" >&2; exit 1; }
cat <<'ENV'
export CGO_ENABLED=1
export CGO_CFLAGS="-D__HIP_PLATFORM_AMD__"
export CGO_LDFLAGS=""
ENV

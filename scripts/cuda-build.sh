#!/usr/bin/env bash
# Builds `sextant` with the `cuda` feature using CUDA's compiler and libraries from PyPI
# wheels, so no system CUDA install is needed. Dev-time; docs/GPU.md says how the binary
# is run on a GPU machine.
#
#   scripts/cuda-build.sh            # → target/cuda/release/sextant (stripped)
#
# Environment:
#   CUDA_COMPUTE_CAP  GPU architecture to compile for (default 90: H100/H200). There is
#                     no GPU here to ask, so it must be named.
#   CUDA_WHEELS       CUDA release of the wheels (default 13.0: nvcc's PTX must not be
#                     newer than the target machine's driver; driver 580 is CUDA 13.0).
#   SEXTANT_CUDA_VENV where the wheels are installed (default target/cuda-venv).
set -euo pipefail
cd "$(dirname "$0")/.."

cap=${CUDA_COMPUTE_CAP:-90}
release=${CUDA_WHEELS:-13.0}
venv=${SEXTANT_CUDA_VENV:-target/cuda-venv}

if [ ! -x "$venv/bin/pip" ]; then
    python3 -m venv "$venv"
fi
# nvcc with its front end (nvvm, crt, cccl headers), and the libraries candle links:
# cudart, cuBLAS/cuBLASLt, cuRAND, NVRTC.
"$venv/bin/pip" install -q \
    "nvidia-cuda-nvcc==$release.*" "nvidia-nvvm==$release.*" "nvidia-cuda-crt==$release.*" \
    "nvidia-cuda-cccl==$release.*" "nvidia-cuda-runtime==$release.*" \
    "nvidia-cuda-nvrtc==$release.*" "nvidia-cublas==$release.*" "nvidia-curand==10.4.0.*"

site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
root="$site/nvidia/cu${release%%.*}"
if [ ! -x "$root/bin/nvcc" ]; then
    echo "error: no nvcc at $root/bin/nvcc after installing the wheels" >&2
    exit 1
fi

# The wheels ship versioned libraries only; the linker looks for the unversioned names.
for lib in cudart cublas cublasLt curand nvrtc; do
    versioned=$(cd "$root/lib" && ls "lib$lib.so."* 2>/dev/null | grep -v builtins | grep -v alt | head -n1)
    if [ -z "$versioned" ]; then
        echo "error: no lib$lib.so.* in $root/lib" >&2
        exit 1
    fi
    ln -sf "$versioned" "$root/lib/lib$lib.so"
done

# libcuda is the driver's, not a wheel's: link against a stub with its soname and the
# functions cuda.h declares, as the toolkit's own lib/stubs/libcuda.so does. The real
# driver provides them on the GPU machine.
mkdir -p "$root/lib/stubs"
gcc -E -P -I"$root/include" "$root/include/cuda.h" \
    | grep -oE '\bcu[A-Z][A-Za-z0-9_]*[[:space:]]*\(' | tr -d ' (' | sort -u \
    | sed 's/.*/int &(void) { return 999; }/' >"$root/lib/stubs/libcuda-stub.c"
gcc -shared -fPIC -Wl,-soname,libcuda.so.1 -o "$root/lib/stubs/libcuda.so" \
    "$root/lib/stubs/libcuda-stub.c"

export PATH="$root/bin:$PATH" CUDA_ROOT="$root" CUDA_PATH="$root" CUDA_COMPUTE_CAP="$cap"
nvcc --version | tail -n2
cargo build --release --features cuda --target-dir target/cuda --bin sextant
strip target/cuda/release/sextant
ls -l target/cuda/release/sextant

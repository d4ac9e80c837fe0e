//! The process's compute settings: thread pools, the allocator, the CPU's kernels, the
//! device.

use anyhow::Result;
use candle_core::Device;

/// Sets the size of candle's CPU thread pools. Must run before the first tensor op: the
/// pools are global and sized once. Every pool (rayon for GEMM, candle's barrier pool for
/// quantized matmul) gets the same count, so they never oversubscribe the cores.
pub fn configure_threads(threads: Option<usize>) {
    let n = threads.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    });
    // SAFETY (edition 2021: set_var is safe): called at start-up, before any thread that
    // could read the environment is spawned.
    std::env::set_var("RAYON_NUM_THREADS", n.to_string());
    std::env::set_var("CANDLE_NUM_THREADS", n.to_string());
}

/// Keeps freed tensor memory in the process for reuse. Every op allocates its output, and
/// with glibc's defaults each large buffer is a fresh `mmap` that the kernel must fault in
/// and zero, then unmaps on free: about a third of embedding time went to page faults
/// (docs/CHANGELOG.md has the measurement). Buffers up to 32 MiB (glibc's largest mmap
/// threshold) come from the heap, and up to 256 MiB of free heap is kept rather than
/// trimmed after every large free (more was barely faster and kept more memory).
/// Call once at start-up, before other threads.
pub fn tune_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes allocator parameters; called before any other thread.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 256 << 20);
        libc::mallopt(libc::M_TOP_PAD, 64 << 20);
    }
}

/// Hands the heap's free memory back to the system. A model's load leaves its
/// transients there (the GGUF metadata with its vocabulary, tensors read before their
/// conversion), below the trim threshold `tune_allocator` raises: 30–60 MB of RSS.
pub fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free pages; it is thread-safe in glibc.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Whether this CPU runs the AVX2 + FMA dot products of `q5_0` and `q8_0` (otherwise
/// Q5_0 is re-quantized to Q8_0, and Q8_0 keeps candle's block type).
pub(crate) fn avx2_kernels() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

pub fn threads() -> usize {
    candle_core::utils::get_num_threads()
}

/// The device the LLM runs on: the first CUDA GPU when built with `--features cuda` and
/// one is present, else the CPU.
pub fn select_device() -> Result<Device> {
    #[cfg(feature = "cuda")]
    {
        if std::env::var("SEXTANT_CPU").is_err() {
            return Ok(Device::cuda_if_available(0)?);
        }
    }
    Ok(Device::Cpu)
}

//! Parsing in a child process, so that a file which crashes a parser, overflows its
//! stack, loops or exhausts memory costs only that file: the child gets the file on stdin,
//! a wall-clock limit, and (on Unix) address-space and CPU-time limits, and answers with
//! the parsed document as JSON on stdout. Any other ending is the file's skip reason.
//!
//! The child is a shell binary run with a hidden argument (`sextant parse-worker`,
//! `sextant-desktop parse-worker`); it calls `run_worker`. The library never assumes
//! which binary it is in: the shell says so with `Isolation`.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};

use super::ParsedDoc;

/// The argument a shell binary recognises to act as a parse worker.
pub const WORKER_ARG: &str = "parse-worker";

/// How to run a parse worker and what it may use.
#[derive(Debug, Clone)]
pub struct Isolation {
    /// The binary, run as `program WORKER_ARG FILE_NAME`.
    pub program: PathBuf,
    /// Wall-clock time for one file.
    pub timeout: Duration,
    /// Address space of the worker (Unix).
    pub memory_bytes: u64,
}

impl Isolation {
    /// Workers run by this very binary (which must handle `WORKER_ARG`).
    pub fn current_exe() -> Result<Isolation> {
        Ok(Isolation {
            program: std::env::current_exe().context("cannot find this program's path")?,
            timeout: Duration::from_secs(30),
            memory_bytes: 1 << 30,
        })
    }
}

/// Parses `bytes` (the file at `path`) in a worker.
pub fn parse_isolated(iso: &Isolation, path: &Path, bytes: &[u8]) -> Result<ParsedDoc> {
    let mut cmd = Command::new(&iso.program);
    cmd.arg(WORKER_ARG)
        .arg(path.file_name().unwrap_or(path.as_os_str()))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    limit(&mut cmd, iso);
    let mut child = cmd
        .spawn()
        .with_context(|| format!("cannot start the parse worker {}", iso.program.display()))?;
    let mut stdin = child.stdin.take().expect("piped");
    let input = bytes.to_vec();
    // Writing and reading on their own threads: a worker that stops reading (it crashed)
    // or writes a lot must not block us.
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let mut stdout = child.stdout.take().expect("piped");
    let mut stderr = child.stderr.take().expect("piped");
    let out = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = stdout.read_to_end(&mut v);
        v
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if start.elapsed() > iso.timeout {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let _ = writer.join();
    let out = out.join().unwrap_or_default();
    let err = err.join().unwrap_or_default();
    let Some(status) = status else {
        bail!(
            "parsing took longer than {} s (a hostile or pathological file?)",
            iso.timeout.as_secs()
        );
    };
    if status.success() {
        return serde_json::from_slice(&out)
            .map_err(|e| anyhow!("the parse worker's answer is not a document: {e}"));
    }
    Err(anyhow!(failure(status, &err, iso)))
}

/// Why a worker ended without a document, in words a user can act on.
fn failure(status: ExitStatus, stderr: &str, iso: &Isolation) -> String {
    let last = stderr
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    if stderr.contains("memory allocation") || stderr.contains("out of memory") {
        return format!(
            "parsing needed more than {} MiB of memory (a decompression bomb?)",
            iso.memory_bytes >> 20
        );
    }
    if stderr.contains("overflowed its stack") {
        return "the parser overflowed its stack (nesting too deep)".into();
    }
    if status.code() == Some(EXIT_PARSE_ERROR) {
        return last.to_string();
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.signal() {
            return match sig {
                libc::SIGXCPU => "parsing used up its CPU time (an endless loop?)".into(),
                libc::SIGKILL | libc::SIGSEGV | libc::SIGBUS => {
                    format!("the parser crashed (signal {sig}; out of memory or a corrupt file)")
                }
                _ => format!("the parser crashed (signal {sig}) {last}"),
            };
        }
    }
    format!("the parser failed ({status}): {last}")
}

/// Exit code of a worker that parsed nothing because the file is not a valid document.
const EXIT_PARSE_ERROR: i32 = 2;

/// The worker's limits travel as arguments and the worker sets them on itself before it
/// reads its input (`apply_limits`). Setting them between fork and exec instead (a
/// `pre_exec` hook) would make every spawn a full `fork` of this process, whose memory a
/// child's peak RSS then counts; without the hook the standard library spawns with
/// `posix_spawn`.
fn limit(cmd: &mut Command, iso: &Isolation) {
    let cpu = iso.timeout.as_secs().max(1) + 1;
    cmd.arg(LIMITS_ARG)
        .arg(iso.memory_bytes.to_string())
        .arg(cpu.to_string());
}

const LIMITS_ARG: &str = "--limits";

/// Address space, CPU seconds, and no core file (a crash must not leave a file the size
/// of its memory behind).
#[cfg(unix)]
fn apply_limits(memory: u64, cpu: u64) -> std::io::Result<()> {
    let set = |resource, value: u64| {
        let lim = libc::rlimit {
            rlim_cur: value as libc::rlim_t,
            rlim_max: value as libc::rlim_t,
        };
        // SAFETY: setrlimit with a valid struct only changes this process's limits.
        if unsafe { libc::setrlimit(resource, &lim) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    };
    set(libc::RLIMIT_AS, memory)?;
    set(libc::RLIMIT_CPU, cpu)?;
    set(libc::RLIMIT_CORE, 0)
}

#[cfg(not(unix))]
fn apply_limits(_memory: u64, _cpu: u64) -> std::io::Result<()> {
    Ok(())
}

/// The worker's side: `args` are what follows `WORKER_ARG` (the file name); the file's
/// bytes come on `input`, the document goes to `output` as JSON, a failure to `errors`.
/// Returns the process exit code. (Shells pass their standard streams.)
pub fn run_worker(
    args: &[String],
    input: &mut dyn Read,
    output: &mut dyn Write,
    errors: &mut dyn Write,
) -> i32 {
    let Some(name) = args.first() else {
        let _ = writeln!(
            errors,
            "usage: {WORKER_ARG} FILE_NAME [{LIMITS_ARG} BYTES SECONDS] < FILE"
        );
        return EXIT_PARSE_ERROR;
    };
    if args.get(1).map(String::as_str) == Some(LIMITS_ARG) {
        let num = |i: usize| args.get(i).and_then(|v| v.parse::<u64>().ok());
        let (Some(memory), Some(cpu)) = (num(2), num(3)) else {
            let _ = writeln!(errors, "{LIMITS_ARG} needs BYTES and SECONDS");
            return EXIT_PARSE_ERROR;
        };
        if let Err(e) = apply_limits(memory, cpu) {
            let _ = writeln!(errors, "cannot set the worker's limits: {e}");
            return 1;
        }
    }
    let mut bytes = Vec::new();
    if let Err(e) = input.read_to_end(&mut bytes) {
        let _ = writeln!(errors, "cannot read the file from stdin: {e}");
        return EXIT_PARSE_ERROR;
    }
    match super::parse(Path::new(name), &bytes) {
        Ok(doc) => {
            let written = serde_json::to_writer(&mut *output, &doc)
                .map_err(std::io::Error::from)
                .and_then(|()| output.flush());
            match written {
                Ok(()) => 0,
                Err(e) => {
                    let _ = writeln!(errors, "cannot write the document: {e}");
                    1
                }
            }
        }
        Err(e) => {
            let _ = writeln!(errors, "{e:#}");
            EXIT_PARSE_ERROR
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_worker_answers_with_a_document_or_the_reason() {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = run_worker(
            &["a.md".into()],
            &mut &b"# Title\n\nBody text here.\n"[..],
            &mut out,
            &mut err,
        );
        assert_eq!(code, 0);
        let doc: ParsedDoc = serde_json::from_slice(&out).unwrap();
        assert_eq!(doc.sections[0].heading, "Title");
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = run_worker(&["a.md".into()], &mut &b"\0\0bin"[..], &mut out, &mut err);
        assert_eq!(code, EXIT_PARSE_ERROR);
        assert!(String::from_utf8_lossy(&err).contains("binary data"));
    }
}

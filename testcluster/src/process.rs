//! Starting the control-plane processes and stopping them by PID.
//!
//! Two lifetimes are supported:
//!
//! * **attached** (tests): each process gets `prctl(PR_SET_PDEATHSIG, SIGKILL)`, so the kernel
//!   kills it when the process that started it dies — also when a test binary exits without
//!   running destructors (statics) or is killed. The death signal fires when the *thread* that
//!   forked the child exits, not the process, and the test harness runs every test on its own
//!   short-lived thread; so all attached processes are spawned from one dedicated spawner
//!   thread that lives until the process exits.
//! * **detached** (`cargo xtask cluster up`): the process starts a new session (`setsid`), so it
//!   outlives the xtask and ignores the terminal's Ctrl-C; it is stopped later by the PID
//!   recorded in `pids.json`.
//!
//! Every process's stdout and stderr go to `<data dir>/logs/<name>.log`.

use std::fs;
use std::io;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow};

use crate::binaries::last_lines;

/// How long each process gets between SIGTERM and SIGKILL.
pub(crate) const STOP_GRACE: Duration = Duration::from_secs(5);

/// A process started by the harness.
pub(crate) struct Process {
    /// Short name, e.g. `kube-apiserver`.
    pub name: String,
    /// The child handle (for waiting; the PID is `child.id()`).
    pub child: Child,
    /// Path of the binary.
    pub exe: PathBuf,
    /// Its arguments (to start it again the same way).
    pub args: Vec<String>,
    /// Log file with stdout and stderr.
    pub log: PathBuf,
    /// Start time, see [`RecordedProcess::start_time`].
    pub start_time: u64,
}

/// Starts `exe args…` with output to `log`.
pub(crate) fn spawn(
    name: &str,
    exe: &Path,
    args: &[String],
    envs: &[(&str, &Path)],
    log: &Path,
    detached: bool,
) -> Result<Process> {
    let log_file = fs::File::create(log).with_context(|| format!("creating {}", log.display()))?;
    let mut cmd = Command::new(exe);
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(log_file.try_clone()?)
        .stderr(log_file);
    for (key, value) in envs {
        cmd.env(key, value);
    }
    let child = if detached {
        // SAFETY: the closure runs in the forked child before exec and only calls setsid(2),
        // which is async-signal-safe; it does not allocate or touch locks.
        unsafe {
            cmd.pre_exec(|| {
                if libc::setsid() == -1 {
                    return Err(io::Error::last_os_error());
                }
                Ok(())
            });
        }
        cmd.spawn()
    } else {
        die_with_parent(&mut cmd);
        spawn_from_spawner_thread(cmd)
    }
    .with_context(|| format!("starting {}", exe.display()))?;
    Ok(Process {
        name: name.to_string(),
        start_time: start_time(child.id()),
        child,
        exe: exe.to_path_buf(),
        args: args.to_vec(),
        log: log.to_path_buf(),
    })
}

/// Makes the kernel kill the child when the thread that spawned it dies, so
/// that a process the harness (or a benchmark) started never outlives it,
/// however it ends.
#[cfg(target_os = "linux")]
pub fn die_with_parent(cmd: &mut Command) {
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: the closure runs in the forked child before exec and only calls prctl(2)
    // and getppid(2), which are async-signal-safe; it does not allocate or touch locks.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) == -1 {
                return Err(io::Error::last_os_error());
            }
            // The parent may have died between fork and prctl: then nobody sends the signal.
            if libc::getppid() != parent {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
}

/// No death signal off Linux (`prctl` is Linux's): a child outlives a test
/// binary that dies without dropping its control plane.
#[cfg(not(target_os = "linux"))]
pub fn die_with_parent(_cmd: &mut Command) {}

type SpawnJob = (Command, mpsc::Sender<io::Result<Child>>);

/// Spawns `cmd` from a thread that lives as long as the process (see the module docs).
fn spawn_from_spawner_thread(cmd: Command) -> io::Result<Child> {
    static SPAWNER: OnceLock<io::Result<mpsc::Sender<SpawnJob>>> = OnceLock::new();
    let sender = SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<SpawnJob>();
        std::thread::Builder::new()
            .name("testcluster-spawner".into())
            .spawn(move || {
                for (mut cmd, reply) in rx {
                    let _ = reply.send(cmd.spawn());
                }
            })
            .map(|_| tx)
    });
    let sender = sender
        .as_ref()
        .map_err(|err| io::Error::new(err.kind(), format!("spawner thread: {err}")))?;
    let (reply_tx, reply_rx) = mpsc::channel();
    sender
        .send((cmd, reply_tx))
        .map_err(|_| io::Error::other("spawner thread is gone"))?;
    reply_rx
        .recv()
        .map_err(|_| io::Error::other("spawner thread is gone"))?
}

impl Process {
    /// PID of the process.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `Some(description)` if the process has exited.
    pub fn exited(&mut self) -> Option<String> {
        match self.child.try_wait() {
            Ok(Some(status)) => Some(status.to_string()),
            Ok(None) => None,
            Err(err) => Some(format!("unknown state ({err})")),
        }
    }

    /// An error saying the process died, with the last 20 lines of its log.
    pub fn died_error(&self, status: &str) -> anyhow::Error {
        anyhow!(
            "{} (pid {}) exited during start-up ({status}). Last lines of {}:\n{}",
            self.name,
            self.pid(),
            self.log.display(),
            tail_log(&self.log, 20)
        )
    }

    /// True if the log says a listen address was taken (then a retry with new ports helps).
    pub fn failed_to_bind(&self) -> bool {
        fs::read_to_string(&self.log)
            .map(|log| log.contains("address already in use"))
            .unwrap_or(false)
    }
}

/// The last `n` lines of a log file (or a note that it cannot be read).
pub(crate) fn tail_log(path: &Path, n: usize) -> String {
    match fs::read(path) {
        Ok(bytes) => last_lines(&String::from_utf8_lossy(&bytes), n),
        Err(err) => format!("(cannot read {}: {err})", path.display()),
    }
}

/// Stops processes in reverse start order: SIGTERM, wait up to `grace`, then SIGKILL.
pub(crate) fn stop_all(processes: &mut Vec<Process>, grace: Duration) {
    while let Some(mut process) = processes.pop() {
        if process.exited().is_some() {
            continue;
        }
        let _ = signal(process.pid(), libc::SIGTERM); // gone already: nothing to stop
        let deadline = Instant::now() + grace;
        while process.exited().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(25));
        }
        if process.exited().is_none() {
            let _ = process.child.kill();
            let _ = process.child.wait();
        }
    }
}

/// Sends `sig` (`libc::SIGTERM`, …) to the process `pid`: the one place the
/// tooling calls kill(2). An error says why (`ESRCH`: it is gone).
pub fn signal(pid: u32, sig: libc::c_int) -> std::io::Result<()> {
    let pid = libc::pid_t::try_from(pid)
        .map_err(|_| std::io::Error::other(format!("{pid} is not a process ID")))?;
    // SAFETY: kill(2) has no memory-safety preconditions.
    if unsafe { libc::kill(pid, sig) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// A process recorded in `pids.json`, to be found again by another process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordedProcess {
    /// Short name, e.g. `etcd`.
    pub name: String,
    /// Process id.
    pub pid: u32,
    /// Binary it was started from (for information).
    pub exe: PathBuf,
    /// Start time of the process (clock ticks after boot, `/proc/<pid>/stat` field 22).
    /// Checked before signalling, so a reused PID is never killed.
    pub start_time: u64,
}

impl RecordedProcess {
    /// True if the process is alive (not a zombie) and is the one recorded (same start time).
    pub fn is_running(&self) -> bool {
        ProcStat::of(self.pid).is_some_and(|stat| {
            stat.start_time == self.start_time && stat.state != 'Z' && stat.state != 'X'
        })
    }
}

/// What the tooling reads of a process's `/proc/<pid>/stat` (proc(5)): the
/// one place it is parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcStat {
    /// Field 3: `R`, `S`, `Z` (zombie), …
    pub state: char,
    /// Fields 14 and 15: CPU time in user and kernel mode, in clock ticks.
    pub utime: u64,
    pub stime: u64,
    /// Field 22: when it started, in clock ticks after boot.
    pub start_time: u64,
}

impl ProcStat {
    /// The process `pid`'s, if it exists.
    pub fn of(pid: u32) -> Option<ProcStat> {
        Self::parse(&fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
    }

    fn parse(stat: &str) -> Option<ProcStat> {
        // The command name (field 2) is in parentheses and may hold spaces
        // and parentheses: fields 3… follow the last `)`.
        let (_, rest) = stat.rsplit_once(')')?;
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let field = |n: usize| fields.get(n - 3)?.parse::<u64>().ok();
        Some(ProcStat {
            state: fields.first()?.chars().next()?,
            utime: field(14)?,
            stime: field(15)?,
            start_time: field(22)?,
        })
    }

    /// User and kernel CPU time, in seconds.
    pub fn cpu_seconds(&self) -> Option<f64> {
        // SAFETY: sysconf with a valid name has no preconditions.
        let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        (per_second > 0).then(|| (self.utime + self.stime) as f64 / per_second as f64)
    }
}

/// Start time of a process (see [`RecordedProcess::start_time`]); 0 if unknown.
pub(crate) fn start_time(pid: u32) -> u64 {
    ProcStat::of(pid).map_or(0, |stat| stat.start_time)
}

/// Stops recorded processes (reverse order): SIGTERM, wait up to `grace` each, then SIGKILL.
/// Processes that are gone (or whose PID now belongs to another process) are skipped.
pub(crate) fn stop_recorded(processes: &[RecordedProcess], grace: Duration) {
    for process in processes.iter().rev() {
        if !process.is_running() {
            continue;
        }
        let _ = signal(process.pid, libc::SIGTERM); // gone already: nothing to stop
        let deadline = Instant::now() + grace;
        while process.is_running() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(25));
        }
        if process.is_running() {
            let _ = signal(process.pid, libc::SIGKILL);
            let deadline = Instant::now() + Duration::from_secs(2);
            while process.is_running() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(25));
            }
        }
    }
}

/// Writes `pids.json` in `dir`: the owner (this process) and the recorded processes.
pub(crate) fn write_record(dir: &Path, processes: &[RecordedProcess]) -> Result<()> {
    let json = serde_json::json!({
        "owner": std::process::id(),
        "processes": processes.iter().map(|p| serde_json::json!({
            "name": p.name,
            "pid": p.pid,
            "exe": p.exe,
            "start_time": p.start_time,
        })).collect::<Vec<_>>(),
    });
    let path = dir.join("pids.json");
    let tmp = dir.join("pids.json.tmp");
    fs::write(&tmp, serde_json::to_vec_pretty(&json)?)
        .with_context(|| format!("writing {}", tmp.display()))?;
    fs::rename(&tmp, &path).with_context(|| format!("writing {}", path.display()))
}

/// Reads `pids.json` from `dir`: `(owner pid, processes)`; `Ok(None)` if there is none.
pub(crate) fn read_record(dir: &Path) -> Result<Option<(u32, Vec<RecordedProcess>)>> {
    let path = dir.join("pids.json");
    let bytes = match fs::read(&path) {
        Ok(bytes) => bytes,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(err).with_context(|| format!("reading {}", path.display())),
    };
    let json: serde_json::Value =
        serde_json::from_slice(&bytes).with_context(|| format!("parsing {}", path.display()))?;
    let owner = json["owner"].as_u64().unwrap_or(0) as u32;
    let processes = json["processes"]
        .as_array()
        .map(|list| {
            list.iter()
                .filter_map(|p| {
                    Some(RecordedProcess {
                        name: p["name"].as_str()?.to_string(),
                        pid: u32::try_from(p["pid"].as_u64()?).ok()?,
                        exe: PathBuf::from(p["exe"].as_str()?),
                        start_time: p["start_time"].as_u64()?,
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(Some((owner, processes)))
}

/// True if a process with this PID exists (any program, zombies included).
pub fn pid_exists(pid: u32) -> bool {
    pid != 0 && Path::new(&format!("/proc/{pid}")).exists()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_is_read_after_its_command_name_whatever_that_holds() {
        // proc(5): pid (comm) state ppid … utime(14) stime(15) … starttime(22) …
        let line = "4242 (a (b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 \
                    250 50 0 0 20 0 3 0 987654 1000000 200 18446744073709551615";
        assert_eq!(
            ProcStat::parse(line),
            Some(ProcStat {
                state: 'S',
                utime: 250,
                stime: 50,
                start_time: 987654
            })
        );
        assert_eq!(ProcStat::parse("4242 (cut short) S 1"), None);
        let me = ProcStat::of(std::process::id()).expect("this process");
        assert!(me.start_time > 0 && me.cpu_seconds().is_some(), "{me:?}");
    }
}

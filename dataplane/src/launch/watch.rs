//! Events to wait on instead of sleeping: a process's exit (pidfd) and a file's creation (inotify).

use std::ffi::{OsStr, OsString};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::Duration;

/// A descriptor that becomes readable when something happened: a process exited (pidfd), or a directory
/// got a new entry of a given name (inotify).
pub(crate) struct Watch {
    fd: OwnedFd,
    /// For inotify: the entry name to wait for.
    name: Option<OsString>,
}

impl Watch {
    /// Readable once `pid` has exited. None when the kernel has no pidfd (before Linux 5.3).
    #[allow(unsafe_code)]
    pub(crate) fn exit_of(pid: u32) -> Option<Watch> {
        if pid == 0 {
            return None;
        }
        // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
        if fd < 0 {
            return None;
        }
        // SAFETY: `fd` is a fresh descriptor owned by nobody else.
        Some(Watch { fd: unsafe { OwnedFd::from_raw_fd(fd as RawFd) }, name: None })
    }

    /// Readable when `path` is created (or moved) into its directory. None without inotify.
    #[allow(unsafe_code)]
    pub(crate) fn creation_of(path: &Path) -> Option<Watch> {
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let name = path.file_name()?.to_owned();
        let dir = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
        // SAFETY: inotify_init1 takes flags and returns a new descriptor or -1.
        let fd = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
        if fd < 0 {
            return None;
        }
        // SAFETY: `fd` is a fresh descriptor owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: a valid inotify descriptor and a NUL-terminated path alive for the call.
        let wd = unsafe {
            libc::inotify_add_watch(fd.as_raw_fd(), dir.as_ptr(), libc::IN_CREATE | libc::IN_MOVED_TO)
        };
        (wd >= 0).then_some(Watch { fd, name: Some(name) })
    }

    /// Completes when the watch fires; never without one. Events for other names are read and ignored.
    #[allow(unsafe_code)]
    pub(crate) async fn fired(watch: Option<&Watch>) {
        use tokio::io::{Interest, unix::AsyncFd};
        let Some(watch) = watch else { return std::future::pending().await };
        // SAFETY: the descriptor, owned by `watch`, stays open while the AsyncFd (dropped at the end of this
        // call, which borrows `watch`) is registered, and is not replaced meanwhile.
        let Ok(fd) = (unsafe { AsyncFd::register_with_interest(watch.fd.as_raw_fd(), Interest::READABLE) })
        else {
            return std::future::pending().await;
        };
        loop {
            let Ok(mut guard) = fd.readable().await else { return std::future::pending().await };
            match &watch.name {
                None => return, // a pidfd stays readable: the process has exited
                Some(name) => {
                    if watch.drain_names().iter().any(|n| n == name) {
                        return;
                    }
                    guard.clear_ready();
                }
            }
        }
    }

    /// Blocks until the watch fires or `timeout` passes.
    #[allow(unsafe_code)]
    pub(crate) fn wait_blocking(&self, timeout: Duration) {
        let mut pfd = libc::pollfd { fd: self.fd.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        let ms = timeout.as_millis().clamp(1, i32::MAX as u128) as libc::c_int;
        // SAFETY: one valid pollfd, exclusively borrowed for the call.
        unsafe { libc::poll(&mut pfd, 1, ms) };
    }

    /// Blocks until one of `watches` fires or `timeout` passes; without any watch, sleeps `timeout`. Inotify
    /// events are consumed (whatever their name: the caller looks at what it waits for), so that a watch
    /// does not stay readable; a pidfd does, once its process exited.
    #[allow(unsafe_code)]
    pub(crate) fn wait_any_blocking(watches: &[Option<&Watch>], timeout: Duration) {
        let present: Vec<&Watch> = watches.iter().flatten().copied().collect();
        if present.is_empty() {
            std::thread::sleep(timeout);
            return;
        }
        let mut fds: Vec<libc::pollfd> = present
            .iter()
            .map(|w| libc::pollfd { fd: w.fd.as_raw_fd(), events: libc::POLLIN, revents: 0 })
            .collect();
        let ms = timeout.as_millis().clamp(1, i32::MAX as u128) as libc::c_int;
        // SAFETY: `fds.len()` valid pollfds, exclusively borrowed for the call.
        unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
        for w in present.iter().filter(|w| w.name.is_some()) {
            w.drain_names();
        }
    }

    /// The names of the inotify events waiting now (read without blocking).
    #[allow(unsafe_code)]
    fn drain_names(&self) -> Vec<OsString> {
        let mut names = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            // SAFETY: a valid descriptor and a writable buffer of `buf.len()` bytes.
            let n = unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            if n <= 0 {
                return names;
            }
            let mut at = 0usize;
            let header = std::mem::size_of::<libc::inotify_event>();
            while at + header <= n as usize {
                // SAFETY: the kernel wrote a whole event header at `at`; read unaligned.
                let event: libc::inotify_event =
                    unsafe { std::ptr::read_unaligned(buf[at..].as_ptr().cast()) };
                let name = &buf[at + header..(at + header + event.len as usize).min(n as usize)];
                let name = &name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())];
                names.push(OsStr::from_bytes(name).to_owned());
                at += header + event.len as usize;
            }
        }
    }
}

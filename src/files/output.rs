//! Writing files: never over something that is not a regular file, never through a symbolic
//! link, with the mode the umask gives (0644 under 022), atomically (a temporary file beside the
//! target, then a rename: a reader never sees half a file).
//!
//! Symbolic links are refused, deliberately: fabricplan often runs as root, and writing through
//! a link someone else placed (a metrics folder others can write, a shared run directory) would
//! let them choose which file root replaces. Name the file the link points to instead. A run
//! directory (`--out`) may be a link to a directory: it is a folder to write into, not a file to
//! replace.
//!
//! Every output path is checked before a run starts ([`check_file`], [`check_run_dir`]) and
//! again just before it is replaced ([`write_atomic_with`]).

use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use super::kind_of;

/// Why a path cannot be written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{}` {why}", crate::text::inert(&path.display().to_string()))]
pub struct OutputError {
    pub path: PathBuf,
    pub why: String,
}

impl OutputError {
    fn new(path: &Path, why: impl Into<String>) -> OutputError {
        OutputError {
            path: path.to_path_buf(),
            why: why.into(),
        }
    }
}

impl From<OutputError> for io::Error {
    fn from(e: OutputError) -> io::Error {
        io::Error::new(io::ErrorKind::AlreadyExists, e.to_string())
    }
}

/// What may already be at an output path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Existing {
    /// A regular file, replaced (`--metrics`, `report -o`); its folder must exist.
    Replace,
    /// Nothing: a file of a new run directory (which itself may not exist yet).
    Nothing,
}

/// The link's target, for a message.
fn link_target(path: &Path) -> String {
    fs::read_link(path)
        .map(|t| format!(" (to `{}`)", crate::text::inert(&t.display().to_string())))
        .unwrap_or_default()
}

/// Can `path` be written as a file, with `existing` allowed there?
pub fn check_file(path: &Path, existing: Existing) -> Result<(), OutputError> {
    match fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => Err(OutputError::new(
            path,
            format!(
                "is a symbolic link{}: fabricplan does not write through links; name the file \
                 itself",
                link_target(path)
            ),
        )),
        Ok(m) if m.is_file() => match existing {
            Existing::Replace => Ok(()),
            Existing::Nothing => Err(OutputError::new(
                path,
                "already exists: a run writes only new files into its directory",
            )),
        },
        Ok(m) => Err(OutputError::new(
            path,
            format!(
                "is {}: fabricplan writes only regular files and replaces nothing else",
                kind_of(&m)
            ),
        )),
        Err(e)
            if e.kind() == io::ErrorKind::NotFound || e.raw_os_error() == Some(libc::ENOTDIR) =>
        {
            let dir = folder_of(path);
            match fs::metadata(&dir) {
                Ok(m) if m.is_dir() => Ok(()),
                Ok(m) => Err(OutputError::new(
                    path,
                    format!(
                        "cannot be written: `{}` is {}, not a directory",
                        dir.display(),
                        kind_of(&m)
                    ),
                )),
                Err(_) if existing == Existing::Nothing => Ok(()),
                Err(e) => Err(OutputError::new(
                    path,
                    format!("cannot be written: its folder `{}`: {e}", dir.display()),
                )),
            }
        }
        Err(e) => Err(OutputError::new(path, format!("cannot be checked: {e}"))),
    }
}

/// Can `dir` be a new run's directory: absent (it is created), or a directory (a link to one
/// is followed)? Whether it already holds a run is the evidence's to say.
pub fn check_run_dir(dir: &Path) -> Result<(), OutputError> {
    let m = match fs::symlink_metadata(dir) {
        Ok(m) => m,
        // absent, or below something that is not a directory: the ancestors say which
        Err(e)
            if e.kind() == io::ErrorKind::NotFound || e.raw_os_error() == Some(libc::ENOTDIR) =>
        {
            return check_ancestors(dir);
        }
        Err(e) => return Err(OutputError::new(dir, format!("cannot be checked: {e}"))),
    };
    if m.file_type().is_symlink() {
        return match fs::metadata(dir) {
            Ok(t) if t.is_dir() => Ok(()),
            Ok(t) => Err(OutputError::new(
                dir,
                format!(
                    "is a symbolic link{} to {}, not a directory: --out names a run directory",
                    link_target(dir),
                    kind_of(&t)
                ),
            )),
            Err(_) => Err(OutputError::new(
                dir,
                format!(
                    "is a symbolic link{} to a directory that does not exist: create it, or \
                     choose another --out",
                    link_target(dir)
                ),
            )),
        };
    }
    if m.is_dir() {
        Ok(())
    } else {
        Err(OutputError::new(
            dir,
            format!(
                "is {}, not a directory: --out names a run directory",
                kind_of(&m)
            ),
        ))
    }
}

/// The nearest ancestor of a directory to create must be a directory.
fn check_ancestors(dir: &Path) -> Result<(), OutputError> {
    for a in dir.ancestors().skip(1) {
        let a = if a.as_os_str().is_empty() {
            Path::new(".")
        } else {
            a
        };
        match fs::metadata(a) {
            Ok(m) if m.is_dir() => return Ok(()),
            Ok(m) => {
                return Err(OutputError::new(
                    dir,
                    format!(
                        "cannot be created: `{}` is {}",
                        crate::text::inert(&a.display().to_string()),
                        kind_of(&m)
                    ),
                ));
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(OutputError::new(dir, format!("cannot be created: {e}"))),
        }
    }
    Ok(())
}

/// The folder a file is written in (`.` for a bare name).
pub fn folder_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Write `name` in `dir` atomically (see [`write_atomic_with`]).
pub fn write_atomic(dir: &Path, name: &str, content: &[u8]) -> io::Result<PathBuf> {
    write_atomic_with(dir, name, |w| w.write_all(content))
}

/// Write `name` in `dir` atomically, readable and writable by this user alone (0600): a state
/// file others must not read or change.
pub fn write_atomic_private(dir: &Path, name: &str, content: &[u8]) -> io::Result<PathBuf> {
    write_atomic_mode(dir, name, 0o600, |w| w.write_all(content))
}

/// Write `dir/name` atomically, its content written by `write` through a buffer (a big file is
/// never held in memory whole): a temporary file beside it with the mode the umask gives, then
/// a rename over the target, which may only be absent or a regular file (checked before and
/// again just before the rename).
pub fn write_atomic_with(
    dir: &Path,
    name: &str,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<PathBuf> {
    write_atomic_mode(dir, name, 0o666, write)
}

/// [`write_atomic_with`] with the temporary file created at `mode` (less the umask).
fn write_atomic_mode(
    dir: &Path,
    name: &str,
    mode: u32,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<PathBuf> {
    let target = dir.join(name);
    check_file(&target, Existing::Replace)?;
    let tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .permissions(fs::Permissions::from_mode(mode))
        .tempfile_in(dir)?;
    let mut w = io::BufWriter::with_capacity(1 << 16, tmp);
    write(&mut w)?;
    w.flush()?;
    let tmp = w.into_inner().map_err(|e| e.into_error())?;
    tmp.as_file().sync_data()?;
    check_file(&target, Existing::Replace)?;
    tmp.persist(&target).map_err(|e| e.error)?;
    Ok(target)
}

/// Create `path` as a new file (never over anything, never through a link) with the mode the
/// umask gives, and write `content` into it.
pub fn write_new(path: &Path, content: &[u8]) -> io::Result<()> {
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)?;
    f.write_all(content)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn only_a_regular_file_is_replaced() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("m.prom");
        write_atomic(d.path(), "m.prom", b"one\n").unwrap();
        write_atomic(d.path(), "m.prom", b"two\n").unwrap();
        assert_eq!(fs::read_to_string(&f).unwrap(), "two\n");
        let sub = d.path().join("sub");
        fs::create_dir(&sub).unwrap();
        let e = write_atomic(d.path(), "sub", b"x").unwrap_err();
        assert!(e.to_string().contains("is a directory"), "{e}");
        std::os::unix::fs::symlink(&f, d.path().join("link")).unwrap();
        let e = write_atomic(d.path(), "link", b"x").unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        assert_eq!(fs::read_to_string(&f).unwrap(), "two\n");
        // nothing left behind by the refusals
        assert_eq!(fs::read_dir(d.path()).unwrap().count(), 3);
    }

    #[test]
    fn a_private_file_is_0600_and_never_written_through_a_link() {
        let d = tempfile::tempdir().unwrap();
        let p = write_atomic_private(d.path(), "s.json", b"{}").unwrap();
        assert_eq!(fs::metadata(&p).unwrap().mode() & 0o777, 0o600);
        let other = d.path().join("other");
        fs::write(&other, "theirs").unwrap();
        std::os::unix::fs::symlink(&other, d.path().join("l.json")).unwrap();
        assert!(write_atomic_private(d.path(), "l.json", b"x").is_err());
        assert_eq!(fs::read_to_string(&other).unwrap(), "theirs");
    }

    #[test]
    fn the_mode_is_the_umasks() {
        let d = tempfile::tempdir().unwrap();
        let p = write_atomic(d.path(), "x", b"x").unwrap();
        // the process's umask, read without setting it
        let status = fs::read_to_string("/proc/self/status").unwrap();
        let mask = status
            .lines()
            .find_map(|l| l.strip_prefix("Umask:"))
            .map(|m| u32::from_str_radix(m.trim(), 8).unwrap())
            .unwrap();
        assert_eq!(fs::metadata(p).unwrap().mode() & 0o777, 0o666 & !mask);
    }

    #[test]
    fn run_directories() {
        let d = tempfile::tempdir().unwrap();
        assert!(check_run_dir(&d.path().join("new/deeper")).is_ok());
        fs::write(d.path().join("file"), "").unwrap();
        let e = check_run_dir(&d.path().join("file")).unwrap_err();
        assert!(e.why.contains("regular file, not a directory"), "{e}");
        let e = check_run_dir(&d.path().join("file/below")).unwrap_err();
        assert!(e.why.contains("cannot be created"), "{e}");
        std::os::unix::fs::symlink("nowhere", d.path().join("dangling")).unwrap();
        let e = check_run_dir(&d.path().join("dangling")).unwrap_err();
        assert!(e.why.contains("does not exist"), "{e}");
        std::os::unix::fs::symlink(d.path(), d.path().join("todir")).unwrap();
        assert!(check_run_dir(&d.path().join("todir")).is_ok());
        // inside a run directory nothing may be there yet
        assert!(check_file(&d.path().join("new/x.json"), Existing::Nothing).is_ok());
        let e = check_file(&d.path().join("file"), Existing::Nothing).unwrap_err();
        assert!(e.why.contains("already exists"), "{e}");
    }
}

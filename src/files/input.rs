//! Reading files with limits: a run directory's files (results.json, baseline.json, plan.toml)
//! are regular files only (a FIFO would block, `/dev/zero` would be read forever), at most
//! [`DEFAULT_MAX_INPUT`] bytes unless `--max-input-size` raises it, opened without blocking and
//! read as a stream. A plan or a tool's saved output may also be a stream (a pipe such as
//! `<(...)`, a character device such as `/dev/null`), read up to [`STREAM_MAX`].

use std::fs::{self, File};
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::{kind_of, size_text};

/// The largest file read by default: 1 GiB (a results.json of 90,000 jobs is about 400 MB).
pub const DEFAULT_MAX_INPUT: u64 = 1 << 30;

/// The largest plan or saved tool output read: 256 MiB (a stream such as `/dev/zero` stops
/// there).
pub const STREAM_MAX: u64 = 256 << 20;

/// The option that raises the limit, as messages name it.
pub const LIMIT_OPTION: &str = "--max-input-size";

/// Why a file cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    #[error("`{}` does not exist", shown(.0))]
    NotFound(PathBuf),
    #[error("`{}` is {kind}, not a regular file", shown(.path))]
    NotRegular { path: PathBuf, kind: &'static str },
    #[error(
        "`{}` is larger than the {} limit ({LIMIT_OPTION} raises it)",
        shown(.path),
        size_text(*.max)
    )]
    TooLarge { path: PathBuf, max: u64 },
    #[error("cannot read `{}`: {source}", shown(.path))]
    Io { path: PathBuf, source: io::Error },
}

fn shown(p: &Path) -> String {
    crate::text::inert(&p.display().to_string()).into_owned()
}

/// Which files a reader takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accept {
    /// Regular files only (a run directory's files).
    Regular,
    /// Regular files and streams: pipes and character devices (a plan, a tool's output:
    /// `<(...)` is a pipe, `/dev/null` a device), read up to the limit; never a directory, a
    /// socket or a block device.
    Stream,
}

/// An opened file, read at most to its limit.
pub struct Limited {
    path: PathBuf,
    inner: io::Take<File>,
    max: u64,
}

impl Read for Limited {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        if n == 0 && self.inner.limit() == 0 {
            // one byte past the limit was asked for and read: the file grew past it
            return Err(io::Error::new(
                io::ErrorKind::FileTooLarge,
                InputError::TooLarge {
                    path: self.path.clone(),
                    max: self.max,
                }
                .to_string(),
            ));
        }
        Ok(n)
    }
}

/// Open `path` for reading within `max` bytes. A FIFO is opened without blocking, so it is
/// refused (with [`Accept::Regular`]) instead of waited on.
pub fn open(path: &Path, max: u64, accept: Accept) -> Result<Limited, InputError> {
    let io_err = |source: io::Error| match source.kind() {
        io::ErrorKind::NotFound => InputError::NotFound(path.to_path_buf()),
        _ => InputError::Io {
            path: path.to_path_buf(),
            source,
        },
    };
    let check = |m: &fs::Metadata| -> Result<(), InputError> {
        use std::os::unix::fs::FileTypeExt;
        let stream = m.file_type().is_fifo() || m.file_type().is_char_device();
        if m.is_file() || (stream && accept == Accept::Stream) {
            Ok(())
        } else {
            Err(InputError::NotRegular {
                path: path.to_path_buf(),
                kind: kind_of(m),
            })
        }
    };
    check(&fs::metadata(path).map_err(io_err)?)?;
    let mut o = fs::OpenOptions::new();
    o.read(true);
    if accept == Accept::Regular {
        o.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    let f = o.open(path).map_err(io_err)?;
    // what was opened, not what the path named a moment before
    let m = f.metadata().map_err(io_err)?;
    check(&m)?;
    if m.is_file() && m.len() > max {
        return Err(InputError::TooLarge {
            path: path.to_path_buf(),
            max,
        });
    }
    Ok(Limited {
        path: path.to_path_buf(),
        inner: f.take(max.saturating_add(1)),
        max,
    })
}

/// Read `path` as text, within `max` bytes (see [`open`]).
pub fn read_text(path: &Path, max: u64, accept: Accept) -> Result<String, InputError> {
    let mut r = open(path, max, accept)?;
    let mut buf = Vec::new();
    r.read_to_end(&mut buf).map_err(|source| InputError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    String::from_utf8(buf).map_err(|e| InputError::Io {
        path: path.to_path_buf(),
        source: io::Error::new(
            io::ErrorKind::InvalidData,
            format!("not UTF-8 text (at byte {})", e.utf8_error().valid_up_to()),
        ),
    })
}

/// Like [`read_text`], `None` when the file is not there.
pub fn read_text_if_there(
    path: &Path,
    max: u64,
    accept: Accept,
) -> Result<Option<String>, InputError> {
    match read_text(path, max, accept) {
        Ok(t) => Ok(Some(t)),
        Err(InputError::NotFound(_)) => Ok(None),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fifo(p: &Path) {
        let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid C string
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    }

    #[test]
    fn only_regular_files_within_the_limit() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("r.json");
        fs::write(&f, "0123456789").unwrap();
        assert_eq!(read_text(&f, 10, Accept::Regular).unwrap(), "0123456789");
        let e = read_text(&f, 9, Accept::Regular).unwrap_err();
        assert!(e.to_string().contains("larger than the 9 B limit"), "{e}");
        // no blocking on a FIFO nobody writes to
        let p = d.path().join("fifo");
        fifo(&p);
        let e = read_text(&p, 10, Accept::Regular).unwrap_err();
        assert!(
            e.to_string().contains("is a FIFO, not a regular file"),
            "{e}"
        );
        for dev in ["/dev/zero", "/dev/null"] {
            let e = read_text(Path::new(dev), 1 << 30, Accept::Regular).unwrap_err();
            assert!(e.to_string().contains("character device"), "{e}");
        }
        // as a stream, a device is read up to the limit
        assert_eq!(
            read_text(Path::new("/dev/null"), 10, Accept::Stream).unwrap(),
            ""
        );
        let e = read_text(Path::new("/dev/zero"), 1000, Accept::Stream).unwrap_err();
        assert!(
            e.to_string().contains("larger than the 1000 B limit"),
            "{e}"
        );
        let e = read_text(d.path(), 10, Accept::Regular).unwrap_err();
        assert!(e.to_string().contains("is a directory"), "{e}");
        let link = d.path().join("zero");
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
        assert!(read_text(&link, 10, Accept::Regular).is_err());
        assert!(matches!(
            read_text_if_there(&d.path().join("none"), 10, Accept::Regular),
            Ok(None)
        ));
        fs::write(&f, b"ok\xff").unwrap();
        let e = read_text(&f, 10, Accept::Regular).unwrap_err();
        assert!(e.to_string().contains("not UTF-8 text (at byte 2)"), "{e}");
    }

    #[test]
    fn a_pipe_is_read_up_to_the_limit() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("fifo");
        fifo(&p);
        let writer = {
            let p = p.clone();
            std::thread::spawn(move || {
                let mut f = fs::OpenOptions::new().write(true).open(p).unwrap();
                let _ = std::io::Write::write_all(&mut f, &[b'x'; 100]);
            })
        };
        let e = read_text(&p, 50, Accept::Stream).unwrap_err();
        assert!(e.to_string().contains("larger than the 50 B limit"), "{e}");
        drop(e);
        writer.join().unwrap();
    }
}

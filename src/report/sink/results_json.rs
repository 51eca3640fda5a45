//! `results.json`: the whole run, versioned (see [`crate::results::RunResults`]).

use std::io;
use std::path::{Path, PathBuf};

use super::{Sink, write_atomic};
use crate::exec::runner::Event;

pub struct ResultsJsonSink {
    dir: PathBuf,
}

impl ResultsJsonSink {
    pub fn new(dir: &Path) -> ResultsJsonSink {
        ResultsJsonSink {
            dir: dir.to_path_buf(),
        }
    }
}

impl Sink for ResultsJsonSink {
    fn name(&self) -> String {
        self.dir.join("results.json").display().to_string()
    }

    fn event(&mut self, e: &Event) -> io::Result<()> {
        let Event::Finished(r) = e else {
            return Ok(());
        };
        let json = serde_json::to_vec_pretty(r.as_ref()).map_err(io::Error::other)?;
        write_atomic(&self.dir, "results.json", &json).map(|_| ())
    }
}

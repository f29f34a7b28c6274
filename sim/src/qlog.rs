//! qlog files of a simulation (`SimConfig::qlog_dir`, `mpquic-sim --qlog-dir`):
//! `flow<i>_client.sqlog` and `flow<i>_server.sqlog` for every flow, background
//! flows included, in the same JSON-SEQ main schema as the apps' `--qlog-dir`
//! (`mpquic::qlog`), so qvis and the schema check read them.
//!
//! Times are simulated: the engine stamps its events with the instants the
//! simulator passes it, counted from the connection's creation, so a 60 s
//! experiment's log spans 60 s however fast it ran. The header carries no
//! wall-clock time: the run reads no clock.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use mpquic::qlog::{write_record, Header, Vantage};
use mpquic::Connection;

/// One endpoint's log file.
pub(crate) struct QlogFile {
    w: BufWriter<File>,
}

/// Make sure `dir` exists and takes new files (a probe file is created and
/// removed), so that an unusable directory is reported before the run.
pub fn check_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let probe = dir.join(format!(".mpquic-sim-probe-{}", std::process::id()));
    File::create(&probe)?;
    std::fs::remove_file(probe)
}

impl QlogFile {
    /// Create `dir/flow<flow>_<client|server>.sqlog` for `conn` and write its header.
    pub(crate) fn create(dir: &Path, flow: usize, conn: &Connection) -> std::io::Result<QlogFile> {
        let header = conn
            .qlog_header()
            .unwrap_or_else(|| Header::new(Vantage::Server))
            .title("mpquic-sim")
            .name(&format!("flow {flow}"));
        let path = dir.join(format!("flow{flow}_{}.sqlog", header.vantage.as_str()));
        let mut w = BufWriter::new(File::create(path)?);
        write_record(&mut w, &header.to_json())?;
        Ok(QlogFile { w })
    }

    /// Copy `conn`'s queued events.
    pub(crate) fn drain(&mut self, conn: &mut Connection) -> std::io::Result<()> {
        while let Some(ev) = conn.qlog_next() {
            write_record(&mut self.w, &ev)?;
        }
        Ok(())
    }

    /// Write out what is buffered.
    pub(crate) fn flush(&mut self) -> std::io::Result<()> {
        self.w.flush()
    }
}

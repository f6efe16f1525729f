//! A loop-device ext4 file system for the benchmark: isolates the test from the root file
//! system (at the cost of diluting I/O-scheduler effects: the loop device's own queue has no
//! scheduler, the backing file's disk does). Uses util-linux (`losetup`, `mount`, `umount`) and
//! e2fsprogs (`mkfs.ext4`); everything is undone on drop.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::runner::BenchError;

pub struct LoopFs {
    image: PathBuf,
    created_image: bool,
    device: Option<String>,
    mount: Option<tempfile::TempDir>,
}

fn run(cmd: &mut Command) -> Result<String, BenchError> {
    let what = format!("{cmd:?}");
    let out = cmd.output().map_err(|source| BenchError::Spawn { what: what.clone(), source })?;
    if !out.status.success() {
        return Err(BenchError::Step(format!("{what} failed: {}", String::from_utf8_lossy(&out.stderr).trim())));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

impl LoopFs {
    /// Makes (if absent) a fully allocated `size_mib` image at `image`, formats it ext4,
    /// attaches it and mounts it on a fresh temporary directory.
    pub fn create(image: &Path, size_mib: u64) -> Result<LoopFs, BenchError> {
        let mut fs = LoopFs { image: image.into(), created_image: false, device: None, mount: None };
        if !image.exists() {
            // Fully written, not sparse: first-allocation effects would otherwise land in the
            // measured runs.
            crate::fixture::write_file(image, size_mib << 20, 42)?;
            fs.created_image = true;
            run(Command::new("mkfs.ext4").args(["-q", "-F"]).arg(image))?;
        }
        let dev = run(Command::new("losetup").args(["--find", "--show"]).arg(image))?;
        fs.device = Some(dev.clone());
        let dir = tempfile::Builder::new()
            .prefix("forefront-bench-mnt")
            .tempdir()
            .map_err(|e| BenchError::Step(format!("mount point: {e}")))?;
        run(Command::new("mount").arg(&dev).arg(dir.path()))?;
        fs.mount = Some(dir);
        Ok(fs)
    }

    pub fn dir(&self) -> &Path {
        self.mount.as_ref().expect("mounted").path()
    }
}

impl Drop for LoopFs {
    fn drop(&mut self) {
        if let Some(m) = &self.mount {
            let _ = Command::new("umount").arg(m.path()).status();
        }
        if let Some(d) = &self.device {
            let _ = Command::new("losetup").args(["-d", d]).status();
        }
        if self.created_image {
            let _ = std::fs::remove_file(&self.image);
        }
    }
}

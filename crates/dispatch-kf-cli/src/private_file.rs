//! Files a command keeps for its user alone (the preflight cache): written whole in a
//! folder only that user may enter (0700), as a file only they may read or write
//! (0600), through a file beside it renamed over it; and read only when the file and
//! its folder are the user's and no one else may write them.

use std::fs::{self, DirBuilder, Metadata, OpenOptions, Permissions};
use std::io::Write as _;
use std::os::unix::fs::{
    DirBuilderExt as _, MetadataExt as _, OpenOptionsExt as _, PermissionsExt,
};
use std::path::Path;

/// Whether a file or folder owned by `owner` with permission bits `mode` may be
/// trusted by the user `me`: it is theirs, and neither its group nor others may write
/// it.
pub(crate) fn trustworthy(owner: u32, mode: u32, me: u32) -> bool {
    owner == me && mode & 0o022 == 0
}

fn me() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// Why `meta`, of `path`, is not to be trusted; `None` when it is.
fn distrust(path: &Path, meta: &Metadata, want_dir: bool) -> Option<String> {
    let kind_ok = if want_dir { meta.is_dir() } else { meta.is_file() };
    if kind_ok && trustworthy(meta.uid(), meta.mode(), me()) {
        return None;
    }
    let what = if want_dir { "folder" } else { "file" };
    Some(format!(
        "{} is not a {what} of this user (uid {}) that only they may write (owner uid {}, mode {:o})",
        path.display(),
        me(),
        meta.uid(),
        meta.mode() & 0o7777
    ))
}

/// The bytes of `path`: `Ok(None)` when it or its folder is absent or cannot be read,
/// `Err` saying why when either is there but not to be trusted.
pub(crate) fn read(path: &Path) -> Result<Option<Vec<u8>>, String> {
    let Some(dir) = path.parent() else { return Ok(None) };
    let Ok(dir_meta) = fs::symlink_metadata(dir) else { return Ok(None) };
    if let Some(why) = distrust(dir, &dir_meta, true) {
        return Err(why);
    }
    let Ok(meta) = fs::symlink_metadata(path) else { return Ok(None) };
    if let Some(why) = distrust(path, &meta, false) {
        return Err(why);
    }
    Ok(fs::read(path).ok())
}

/// Why a file was not written.
#[derive(Debug)]
pub(crate) enum NotWritten {
    /// Its folder is not this user's, or others may write in it: never written in.
    Untrusted(String),
    /// The file system refused.
    Failed,
}

/// Writes `bytes` to `path`, mode 0600, in a folder made 0700 (its missing parents
/// too): into a file beside it, then renamed over it, so a reader sees the old file or
/// the new one, never half of one.
pub(crate) fn write(path: &Path, bytes: &[u8]) -> Result<(), NotWritten> {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(NotWritten::Failed);
    };
    let failed = |_: std::io::Error| NotWritten::Failed;
    DirBuilder::new().recursive(true).mode(0o700).create(dir).map_err(failed)?;
    let meta = fs::symlink_metadata(dir).map_err(failed)?;
    if meta.is_dir() && meta.uid() == me() && meta.mode() & 0o077 != 0 {
        // A folder made before it was kept private: make it so.
        fs::set_permissions(dir, Permissions::from_mode(0o700)).map_err(failed)?;
    }
    if let Some(why) = distrust(dir, &fs::symlink_metadata(dir).map_err(failed)?, true) {
        return Err(NotWritten::Untrusted(why));
    }
    let partial = dir.join(format!(".{}.{}.partial", name.to_string_lossy(), std::process::id()));
    let _ = fs::remove_file(&partial);
    let written = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&partial)
        .and_then(|mut f| f.write_all(bytes))
        .and_then(|()| fs::rename(&partial, path));
    if written.is_err() {
        let _ = fs::remove_file(&partial);
    }
    written.map_err(failed)
}

/// Writes `bytes` to `path` as a file only its owner may read or write (0600, made so
/// when it existed with more), never through a symbolic link: one at `path` is refused
/// (the kernel's `O_NOFOLLOW`), so a link planted in a shared folder cannot make the
/// command write elsewhere. For a file the user names, in a folder that is not ours to
/// change (`sim serve --kubeconfig-out /tmp/...`).
#[cfg(any(feature = "sim", test))]
pub(crate) fn write_own(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let no_follow = i32::try_from(rustix::fs::OFlags::NOFOLLOW.bits()).unwrap_or(0);
    let mut file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .custom_flags(no_follow)
        .open(path)?;
    file.set_permissions(Permissions::from_mode(0o600))?;
    file.write_all(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> std::path::PathBuf {
        let dir =
            std::env::temp_dir().join(format!("dispatch-kf-private-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        dir
    }

    fn mode(path: &Path) -> u32 {
        fs::metadata(path).unwrap().mode() & 0o777
    }

    #[test]
    fn only_the_users_own_files_that_no_one_else_may_write_are_trusted() {
        assert!(trustworthy(1000, 0o100600, 1000));
        assert!(trustworthy(1000, 0o40700, 1000));
        assert!(trustworthy(1000, 0o100644, 1000), "others may read a digest, not write it");
        assert!(!trustworthy(0, 0o100600, 1000), "another user's file");
        assert!(!trustworthy(1001, 0o40700, 1000), "another user's folder");
        assert!(!trustworthy(1000, 0o100620, 1000), "its group may write it");
        assert!(!trustworthy(1000, 0o40777, 1000), "anyone may write in it");
    }

    #[test]
    fn a_file_is_written_0600_in_a_0700_folder_and_read_back() {
        let root = dir("modes");
        let path = root.join("a/b/kept.json");
        write(&path, b"one").unwrap();
        assert_eq!((mode(&path), mode(path.parent().unwrap())), (0o600, 0o700));
        assert_eq!(mode(&root.join("a")), 0o700, "the missing parents too");
        write(&path, b"two").unwrap();
        assert_eq!(read(&path).unwrap().as_deref(), Some(&b"two"[..]));
        let left: Vec<_> = fs::read_dir(path.parent().unwrap()).unwrap().collect();
        assert_eq!(left.len(), 1, "no partial file is left beside it");
        assert_eq!(read(&root.join("a/b/absent.json")), Ok(None));
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_file_or_folder_others_may_write_is_not_trusted_and_a_folder_of_ours_is_made_private() {
        let root = dir("others");
        let path = root.join("kept.json");
        write(&path, b"x").unwrap();
        fs::set_permissions(&path, Permissions::from_mode(0o666)).unwrap();
        assert!(read(&path).unwrap_err().contains("mode 666"));
        fs::set_permissions(&path, Permissions::from_mode(0o600)).unwrap();
        fs::set_permissions(&root, Permissions::from_mode(0o777)).unwrap();
        assert!(read(&path).unwrap_err().contains("is not a folder"));
        write(&path, b"y").unwrap();
        assert_eq!(mode(&root), 0o700, "writing makes a folder of ours private again");
        assert_eq!(read(&path).unwrap().as_deref(), Some(&b"y"[..]));
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_named_file_is_written_0600_and_never_through_a_link() {
        let dir = dir("own");
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("kubeconfig");
        write_own(&path, b"first").unwrap();
        assert_eq!((fs::read(&path).unwrap(), mode(&path)), (b"first".to_vec(), 0o600));
        fs::set_permissions(&path, Permissions::from_mode(0o644)).unwrap();
        write_own(&path, b"second").unwrap();
        assert_eq!((fs::read(&path).unwrap(), mode(&path)), (b"second".to_vec(), 0o600));
        let target = dir.join("elsewhere");
        fs::write(&target, b"theirs").unwrap();
        let link = dir.join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(write_own(&link, b"mine").is_err(), "a link is refused");
        assert_eq!(fs::read(&target).unwrap(), b"theirs", "nothing was written through it");
        fs::remove_dir_all(&dir).unwrap();
    }
}

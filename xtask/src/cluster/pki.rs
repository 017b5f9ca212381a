//! The cluster's certificates, made with `openssl` at `up`: one CA; a serving
//! certificate for 127.0.0.1 and localhost that the apiserver, kwok's kubelet endpoint
//! and the three controllers' webhooks all present; the admin's client certificate
//! (group `system:masters`); and the service-account signing key.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::run;

/// The files the cluster's components are pointed at.
#[derive(Clone, Debug)]
pub(crate) struct Pki {
    pub(crate) dir: PathBuf,
}

impl Pki {
    pub(crate) fn ca_crt(&self) -> PathBuf {
        self.dir.join("ca.crt")
    }
    pub(crate) fn serving_crt(&self) -> PathBuf {
        self.dir.join("serving.crt")
    }
    pub(crate) fn serving_key(&self) -> PathBuf {
        self.dir.join("serving.key")
    }
    pub(crate) fn admin_crt(&self) -> PathBuf {
        self.dir.join("admin.crt")
    }
    pub(crate) fn admin_key(&self) -> PathBuf {
        self.dir.join("admin.key")
    }
    pub(crate) fn sa_key(&self) -> PathBuf {
        self.dir.join("sa.key")
    }
    pub(crate) fn sa_pub(&self) -> PathBuf {
        self.dir.join("sa.pub")
    }

    /// Makes every file anew in `dir`.
    pub(crate) fn make(dir: &Path) -> Result<Pki, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let pki = Pki { dir: dir.to_path_buf() };
        let days = "3650";
        openssl(
            dir,
            &[
                "req",
                "-x509",
                "-new",
                "-nodes",
                "-newkey",
                "rsa:2048",
                "-days",
                days,
                "-keyout",
                "ca.key",
                "-out",
                "ca.crt",
                "-subj",
                "/CN=dispatch-kf-cluster-ca",
            ],
        )?;
        pki.signed(
            "serving",
            "/CN=localhost",
            "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n",
        )?;
        pki.signed(
            "admin",
            "/O=system:masters/CN=dispatch-kf-admin",
            "extendedKeyUsage=clientAuth\n",
        )?;
        openssl(dir, &["genrsa", "-out", "sa.key", "2048"])?;
        openssl(dir, &["rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub"])?;
        Ok(pki)
    }

    /// A key and a certificate `name.crt` signed by the CA, with `extensions`.
    fn signed(&self, name: &str, subject: &str, extensions: &str) -> run::Result {
        let ext = self.dir.join(format!("{name}.ext"));
        std::fs::write(&ext, extensions).map_err(|e| format!("{}: {e}", ext.display()))?;
        let (key, csr, crt) = (format!("{name}.key"), format!("{name}.csr"), format!("{name}.crt"));
        let ext = format!("{name}.ext");
        openssl(
            &self.dir,
            &[
                "req", "-new", "-nodes", "-newkey", "rsa:2048", "-keyout", &key, "-out", &csr,
                "-subj", subject,
            ],
        )?;
        openssl(
            &self.dir,
            &[
                "x509",
                "-req",
                "-in",
                &csr,
                "-CA",
                "ca.crt",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-days",
                "3650",
                "-out",
                &crt,
                "-extfile",
                &ext,
            ],
        )
    }

    /// A file's bytes in base64, as kubeconfigs and webhook configurations carry them.
    pub(crate) fn base64_of(path: &Path) -> Result<String, String> {
        use base64::Engine;
        let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(base64::engine::general_purpose::STANDARD.encode(bytes))
    }
}

fn openssl(dir: &Path, args: &[&str]) -> run::Result {
    let output = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .map_err(|e| format!("cannot run openssl (is it installed?): {e}"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!("openssl {}: {}", args.join(" "), String::from_utf8_lossy(&output.stderr)))
    }
}

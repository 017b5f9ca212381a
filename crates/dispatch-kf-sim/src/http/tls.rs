//! HTTPS as a cluster serves it: a CA made when the sim starts, and a serving
//! certificate it signs for `127.0.0.1` and `localhost`. The kubeconfig carries the CA,
//! so clients verify the server as they verify a real apiserver, and kubectl, which
//! sends a bearer token only over HTTPS, sends it.
//!
//! Both keys live in memory for the sim's lifetime and are never written anywhere.

use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, KeyUsagePurpose,
    SanType,
};
use rustls::ServerConfig;
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio_rustls::TlsAcceptor;

/// The sim's certificate authority and the acceptor of its serving certificate.
pub(crate) struct Tls {
    /// The CA's certificate, PEM: what a kubeconfig's `certificate-authority-data` holds.
    pub(crate) ca_pem: String,
    /// Completes the server's side of each handshake.
    pub(crate) acceptor: TlsAcceptor,
}

/// Why the certificates could not be made.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// rcgen refused the parameters or could not sign.
    #[error("cannot make the simulated cluster's certificates: {0}")]
    Certificate(#[from] rcgen::Error),
    /// rustls refused the certificate or key.
    #[error("cannot serve the simulated cluster's certificate: {0}")]
    Config(#[from] rustls::Error),
}

impl Tls {
    /// A fresh CA and a serving certificate signed by it.
    pub(crate) fn new() -> Result<Tls, TlsError> {
        let mut ca = CertificateParams::new(Vec::<String>::new())?;
        ca.distinguished_name.push(DnType::CommonName, "dispatch-kf-sim-ca");
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::DigitalSignature];
        let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate()?)?;

        let mut server = CertificateParams::new(vec!["localhost".to_owned()])?;
        server.distinguished_name.push(DnType::CommonName, "dispatch-kf-sim");
        server.subject_alt_names.push(SanType::IpAddress(IpAddr::V4(Ipv4Addr::LOCALHOST)));
        let key = KeyPair::generate()?;
        let cert = server.signed_by(&key, &ca)?;

        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        let mut config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_single_cert(vec![cert.der().clone(), ca.der().clone()], key)?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Tls { ca_pem: ca.pem(), acceptor: TlsAcceptor::from(Arc::new(config)) })
    }
}

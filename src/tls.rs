//! TLS for every HTTP client and for the coordinator's own server, with rustls (its `ring`
//! provider): clients trust the system's roots plus an optional CA file (a company's
//! private PKI); the server presents a certificate chain and key from PEM files.
//!
//! A client's failure is described as what it is ([`describe`]): a certificate the client
//! does not accept, a server that does not speak TLS, an `http://` URL at a TLS server,
//! rather than "connection refused".

use std::error::Error as _;
use std::path::Path;
use std::sync::Arc;

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

/// What can be wrong with TLS files or settings.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot read {what} {path}: {message}")]
    File {
        what: &'static str,
        path: String,
        message: String,
    },
    #[error("{what} {path} holds no {expected}")]
    Empty {
        what: &'static str,
        path: String,
        expected: &'static str,
    },
    #[error("the TLS settings are not usable: {0}")]
    Settings(String),
}

/// Make `ring` the process's TLS provider; every client and server built here uses it.
pub fn install_provider() {
    // Already installed (by an earlier call) is fine.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

fn certificates(what: &'static str, path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let shown = path.display().to_string();
    let certs = CertificateDer::pem_file_iter(path)
        .and_then(|iter| iter.collect::<Result<Vec<_>, _>>())
        .map_err(|e| TlsError::File {
            what,
            path: shown.clone(),
            message: e.to_string(),
        })?;
    if certs.is_empty() {
        return Err(TlsError::Empty {
            what,
            path: shown,
            expected: "PEM certificate",
        });
    }
    Ok(certs)
}

/// The environment variable naming a CA file (PEM) every client of this program trusts
/// when it is not given one itself.
pub const CA_FILE_ENV: &str = "INTENTDESK_CA_FILE";

/// A client builder that trusts the system's roots and, when given (or named by
/// [`CA_FILE_ENV`]), the certificates of `ca_file` (PEM) as well.
pub fn client(ca_file: Option<&Path>) -> Result<reqwest::ClientBuilder, TlsError> {
    install_provider();
    let mut builder = reqwest::Client::builder();
    let from_env = std::env::var_os(CA_FILE_ENV)
        .filter(|v| !v.is_empty())
        .map(std::path::PathBuf::from);
    if let Some(path) = ca_file.or(from_env.as_deref()) {
        let roots = certificates("the CA file", path)?
            .into_iter()
            .map(|der| {
                reqwest::Certificate::from_der(&der)
                    .map_err(|e| TlsError::Settings(format!("{}: {e}", path.display())))
            })
            .collect::<Result<Vec<_>, _>>()?;
        builder = builder.tls_certs_merge(roots);
    }
    Ok(builder)
}

/// The coordinator's server side: its certificate chain and private key (PEM files).
pub fn acceptor(cert_file: &Path, key_file: &Path) -> Result<tokio_rustls::TlsAcceptor, TlsError> {
    install_provider();
    let chain = certificates("the certificate file", cert_file)?;
    let key = PrivateKeyDer::from_pem_file(key_file).map_err(|e| TlsError::File {
        what: "the key file",
        path: key_file.display().to_string(),
        message: e.to_string(),
    })?;
    let mut config = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| {
            TlsError::Settings(format!("the certificate and key do not go together: {e}"))
        })?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(tokio_rustls::TlsAcceptor::from(Arc::new(config)))
}

/// What went wrong with a request that got no answer, in an operator's words.
pub fn describe(e: &reqwest::Error) -> String {
    let mut chain = Vec::new();
    let mut source = e.source();
    while let Some(s) = source {
        chain.push(s.to_string());
        source = s.source();
    }
    let text = chain.join(": ");
    let certificate = chain.iter().any(|s| {
        s.contains("certificate") || s.contains("UnknownIssuer") || s.contains("NotValidForName")
    });
    if certificate {
        return format!(
            "the server's TLS certificate was not accepted ({text}); give the CA that signed it \
             with --ca-file, or check the host name"
        );
    }
    if text.contains("InvalidContentType")
        || text.contains("corrupt message")
        || text.contains("HandshakeFailure")
    {
        return format!(
            "the TLS handshake failed ({text}); does the server speak HTTPS on this port?"
        );
    }
    if e.is_connect() {
        return "connection refused or no route".into();
    }
    if e.is_timeout() {
        return "no answer in time".into();
    }
    if text.contains("invalid HTTP") || text.contains("HTTP/0.9") || text.contains("parse") {
        return format!(
            "the server's answer is not HTTP ({text}); if it serves HTTPS, use an https:// URL"
        );
    }
    format!("the connection broke ({text})")
}
